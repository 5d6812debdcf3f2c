/**
 * Appends an incremental update (ISO 32000-1, 7.5.6) to a PDF: new objects
 * and new versions of existing ones, a cross-reference section for them and
 * a trailer that points back to the previous section. Every byte before it
 * stays as it was, so Typst's objects, its document ID and everything a
 * PDF/A validator checked are kept, and a later step (a signature) can
 * append its own update after this one in the same way.
 */
import { ownedBuffer } from '../retention/owned-buffer.js';
import type { PdfStructure } from './pdf-structure.js';
import { type PdfDict, type PdfValue, writeValue } from './pdf-syntax.js';
import { wipe } from '../retention/wipe.js';

/** One object to write: a value, or a stream dictionary and its (already encoded) bytes. */
export interface UpdatedObject {
  num: number;
  value: PdfValue;
  /** The stream's bytes; `/Length` is set from them. */
  stream?: Buffer;
}

/** Keys a new trailer copies from the newest one, besides `/Size` and `/Prev`. */
const TRAILER_KEYS = ['Root', 'Info', 'ID', 'Encrypt'] as const;

/**
 * The PDF with `objects` appended as one update, in a buffer of its own
 * (the caller wipes `pdf` and, once sent, the result). Objects numbered
 * from `structure.size` on are new; `/Size` grows to cover them.
 */
export function appendUpdate(pdf: Uint8Array, structure: PdfStructure, objects: UpdatedObject[]): Buffer {
  const parts: Buffer[] = [];
  let at = pdf.length;
  const push = (part: Buffer) => {
    parts.push(part);
    at += part.length;
  };
  // The previous file may end right after `%%EOF`: the update starts on a line of its own.
  push(Buffer.from('\n'));
  const offsets = new Map<number, number>();
  for (const object of [...objects].sort((a, b) => a.num - b.num)) {
    offsets.set(object.num, at);
    push(Buffer.from(`${object.num} 0 obj\n`));
    if (object.stream) {
      const dict = new Map(object.value as PdfDict);
      dict.set('Length', object.stream.length);
      push(writeValue(dict));
      push(Buffer.from('\nstream\n'));
      push(object.stream);
      push(Buffer.from('\nendstream\nendobj\n'));
    } else {
      push(writeValue(object.value));
      push(Buffer.from('\nendobj\n'));
    }
  }
  const xref = at;
  push(Buffer.from('xref\n'));
  const nums = [...offsets.keys()];
  for (let i = 0; i < nums.length; ) {
    let j = i;
    while (j + 1 < nums.length && nums[j + 1] === nums[j]! + 1) j++;
    push(Buffer.from(`${nums[i]} ${j - i + 1}\n`));
    for (let k = i; k <= j; k++) push(Buffer.from(`${String(offsets.get(nums[k]!)).padStart(10, '0')} 00000 n\r\n`));
    i = j + 1;
  }
  const trailer: PdfDict = new Map<string, PdfValue>([['Size', Math.max(structure.size, ...nums.map((n) => n + 1))]]);
  for (const key of TRAILER_KEYS) {
    const value = structure.trailer.get(key);
    if (value !== undefined) trailer.set(key, value);
  }
  trailer.set('Prev', structure.startxref);
  push(Buffer.from('trailer\n'));
  push(writeValue(trailer));
  push(Buffer.from(`\nstartxref\n${xref}\n%%EOF\n`));
  const out = ownedBuffer(at);
  out.set(pdf, 0);
  let offset = pdf.length;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  // The parts held copies of the new objects (the XMP, the XML): wiped here, the result is the only copy.
  for (const part of parts) wipe(part);
  return out;
}
