/**
 * The bytes of an error answer, `{"error": "..."}`: every error body the
 * service sends is made here (the routes' and hooks' through
 * http/errors.ts, the raw answers of http/client-errors.ts, the metrics
 * listener's 404, the workers' answers). One that names an asset
 * copies the name's bytes from the body (a JSON body's are valid JSON string
 * content as they stand; a form's are escaped), so the name never becomes a
 * string; the caller wipes the buffer once it is sent.
 */
import { isUtf8 } from 'node:buffer';
import type { BodyError } from './layout.js';
import { utf8Width } from './text-position.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';

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

const HEX = Buffer.from('0123456789abcdef');

/**
 * A form's file name as JSON string content, in a buffer of its own: `"`
 * and `\` escaped, and every control byte and byte of broken UTF-8 as
 * `\u00XX`, so that the answer is valid JSON whatever the name holds.
 */
function escapedName(raw: Uint8Array): Buffer {
  const out = ownedBuffer(raw.length * 6);
  let o = 0;
  for (let i = 0; i < raw.length; ) {
    const b = raw[i]!;
    const width = b < 0x80 ? 1 : utf8Width(b);
    if (b >= 0x80 && width > 1 && isUtf8(raw.subarray(i, i + width))) {
      out.set(raw.subarray(i, i + width), o);
      o += width;
      i += width;
      continue;
    }
    if (b === 0x22 || b === 0x5c) {
      out[o++] = 0x5c;
      out[o++] = b;
    } else if (b < 0x20 || b >= 0x7f) {
      o += out.write('\\u00', o, 'latin1');
      out[o++] = HEX[b >> 4]!;
      out[o++] = HEX[b & 15]!;
    } else {
      out[o++] = b;
    }
    i++;
  }
  return out.subarray(0, o);
}

export function errorBody(body: Uint8Array, error: BodyError): Buffer {
  if ('message' in error) return jsonErrorBody(error.message);
  // The message's parts go straight into the answer's own buffer: they may quote the request (a validator's message
  // naming an element of the XML), and a Buffer made of a short string would be a slice of Node's shared pool,
  // which no one wipes.
  const before = JSON.stringify({ error: error.before }).slice(0, -2);
  const after = `${JSON.stringify(error.after).slice(1, -1)}"}`;
  const sent = body.subarray(error.name.start, error.name.end);
  const name = error.raw ? escapedName(sent) : sent;
  const cut = cutAt(name, NAME_BYTES);
  const ellipsis = cut < name.length ? '...' : '';
  const out = ownedBuffer(Buffer.byteLength(before) + cut + ellipsis.length + Buffer.byteLength(after));
  let at = out.write(before);
  out.set(name.subarray(0, cut), at);
  at += cut;
  at += out.write(ellipsis, at, 'latin1');
  out.write(after, at);
  if (error.raw) wipe(name);
  return out;
}
