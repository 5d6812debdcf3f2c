/**
 * The bytes of an error answer, `{"error": "..."}`. One that names an asset
 * copies the name's bytes from the body (they are valid JSON string content
 * as they stand), so the name never becomes a string; the caller wipes the
 * buffer once it is sent.
 */
import type { BodyError } from './layout.js';
import { utf8Width } from '../text-position.js';
import { ownedBuffer } from './owned-buffer.js';

/** At most this many bytes of a name are quoted, cut where no escape or character is split. */
const NAME_BYTES = 100;

/** The body of `{"error": message}` for a message made by the service. */
export function jsonErrorBody(message: string): Buffer {
  const text = JSON.stringify({ error: message });
  const bytes = ownedBuffer(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/** Where to cut raw JSON string content at most `limit` bytes long, not inside an escape or a UTF-8 sequence. */
function cutAt(raw: Uint8Array, limit: number): number {
  if (raw.length <= limit) return raw.length;
  let safe = 0;
  for (let i = 0; i < limit; ) {
    const b = raw[i]!;
    const width = b === 0x5c ? (raw[i + 1] === 0x75 ? 6 : 2) : utf8Width(b);
    if (i + width > limit) break;
    i += width;
    safe = i;
  }
  return safe;
}

export function errorBody(body: Uint8Array, error: BodyError): Buffer {
  if ('message' in error) return jsonErrorBody(error.message);
  const before = Buffer.from(JSON.stringify({ error: error.before }).slice(0, -2));
  const after = Buffer.from(`${JSON.stringify(error.after).slice(1, -1)}"}`);
  const name = body.subarray(error.name.start, error.name.end);
  const cut = cutAt(name, NAME_BYTES);
  const ellipsis = cut < name.length ? Buffer.from('...') : Buffer.alloc(0);
  const out = ownedBuffer(before.length + cut + ellipsis.length + after.length);
  let at = 0;
  for (const part of [before, name.subarray(0, cut), ellipsis, after]) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
