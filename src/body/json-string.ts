/**
 * Decodes a JSON string's content (between its quotes, as checked by
 * json-check.ts) into UTF-8 bytes, in a buffer of its own that the caller
 * wipes: the template becomes Typst's main file this way without ever being
 * a JavaScript string.
 *
 * A surrogate pair becomes its 4-byte UTF-8 character; an unpaired
 * surrogate (which JSON allows and UTF-8 cannot hold) becomes its 3-byte
 * WTF-8 form, which is never valid UTF-8, so it never equals a checked
 * name; callers that need text refuse unpaired surrogates first.
 */
import type { Range } from './json-check.js';
import { ownedBuffer } from './owned-buffer.js';

const BACKSLASH = 0x5c;

/** Simple escapes: `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`. */
const SIMPLE: Record<number, number> = { 34: 0x22, 92: 0x5c, 47: 0x2f, 98: 0x08, 102: 0x0c, 110: 0x0a, 114: 0x0d, 116: 0x09 };

function hex4(body: Uint8Array, at: number): number {
  let value = 0;
  for (let k = 0; k < 4; k++) {
    const b = body[at + k]!;
    value = (value << 4) | (b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x57);
  }
  return value;
}

export function unescapeJsonString(body: Uint8Array, range: Range): Buffer {
  const first = body.indexOf(BACKSLASH, range.start);
  if (first === -1 || first >= range.end) {
    const copy = ownedBuffer(range.end - range.start);
    copy.set(body.subarray(range.start, range.end));
    return copy;
  }
  // Escapes only shrink: `\uXXXX` (6 bytes) is at most 3 bytes, a pair (12) is 4.
  const out = ownedBuffer(range.end - range.start);
  out.set(body.subarray(range.start, first));
  let o = first - range.start;
  for (let i = first; i < range.end; ) {
    const b = body[i]!;
    if (b !== BACKSLASH) {
      out[o++] = b;
      i++;
      continue;
    }
    const escaped = body[i + 1]!;
    if (escaped !== 0x75) {
      out[o++] = SIMPLE[escaped]!;
      i += 2;
      continue;
    }
    let code = hex4(body, i + 2);
    i += 6;
    if (code >= 0xd800 && code <= 0xdbff && body[i] === BACKSLASH && body[i + 1] === 0x75) {
      const low = hex4(body, i + 2);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i += 6;
      }
    }
    if (code < 0x80) out[o++] = code;
    else if (code < 0x800) {
      out[o++] = 0xc0 | (code >> 6);
      out[o++] = 0x80 | (code & 0x3f);
    } else if (code < 0x10000) {
      out[o++] = 0xe0 | (code >> 12);
      out[o++] = 0x80 | ((code >> 6) & 0x3f);
      out[o++] = 0x80 | (code & 0x3f);
    } else {
      out[o++] = 0xf0 | (code >> 18);
      out[o++] = 0x80 | ((code >> 12) & 0x3f);
      out[o++] = 0x80 | ((code >> 6) & 0x3f);
      out[o++] = 0x80 | (code & 0x3f);
    }
  }
  // A view of the first `o` bytes; wiping it wipes what was written (the rest was never written).
  return out.subarray(0, o);
}
