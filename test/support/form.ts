/**
 * A multipart/form-data body written out by hand, so that each byte sent is
 * known: fields, and files with their names.
 */

/** A part: a field, or a file when it has a `filename`. */
export interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  type?: string;
}

export function formBody(parts: Part[], boundary: string): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const filename = part.filename === undefined ? '' : `; filename="${part.filename.replace(/["\\]/g, '\\$&')}"`;
    const type = part.type ? `\r\nContent-Type: ${part.type}` : '';
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${filename}${type}\r\n\r\n`));
    chunks.push(Buffer.from(part.value));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}
