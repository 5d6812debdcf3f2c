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
import { hexValue } from './hex.js';
import type { Range } from './layout.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';
import { BACKSLASH } from './ascii.js';

/** Simple escapes: `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`. */
export const SIMPLE_ESCAPES: Record<number, number> = {
  34: 0x22,
  92: 0x5c,
  47: 0x2f,
  98: 0x08,
  102: 0x0c,
  110: 0x0a,
  114: 0x0d,
  116: 0x09,
};

/** The 16-bit value of the four hex digits of a `\uXXXX` escape at `at`, or -1 if they are not four hex digits. */
export function hex4(body: Uint8Array, at: number): number {
  if (at + 4 > body.length) return -1;
  const a = hexValue(body[at]!);
  const b = hexValue(body[at + 1]!);
  const c = hexValue(body[at + 2]!);
  const d = hexValue(body[at + 3]!);
  return a < 0 || b < 0 || c < 0 || d < 0 ? -1 : (a << 12) | (b << 8) | (c << 4) | d;
}

/** Ranges up to this long are searched byte by byte; longer ones with the native search. */
const SHORT = 32;

/**
 * Index of the first backslash in `body[start, end)`, or -1. Never looks
 * past `end`: a search to the end of the body for each of many small
 * strings would make checking a body quadratic in its size.
 */
export function firstEscape(body: Uint8Array, start: number, end: number): number {
  if (end - start <= SHORT) {
    for (let i = start; i < end; i++) if (body[i] === BACKSLASH) return i;
    return -1;
  }
  const at = body.subarray(start, end).indexOf(BACKSLASH);
  return at < 0 ? -1 : start + at;
}

/**
 * Writes the content of the JSON string `body[start, end)`, whose first
 * backslash is at `first`, unescaped into `out` from index 0; returns the
 * length written. `out` must hold `end - start` bytes: escapes only shrink
 * (`\uXXXX`, 6 bytes, is at most 3; a pair, 12, is 4).
 */
export function unescapeInto(body: Uint8Array, start: number, end: number, first: number, out: Uint8Array): number {
  if (first - start > SHORT) out.set(body.subarray(start, first));
  else for (let i = start; i < first; i++) out[i - start] = body[i]!;
  let o = first - start;
  for (let i = first; i < end; ) {
    const b = body[i]!;
    if (b !== BACKSLASH) {
      out[o++] = b;
      i++;
      continue;
    }
    const escaped = body[i + 1]!;
    if (escaped !== 0x75) {
      out[o++] = SIMPLE_ESCAPES[escaped]!;
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
  return o;
}

export function unescapeJsonString(body: Uint8Array, range: Range): Buffer {
  const first = firstEscape(body, range.start, range.end);
  const out = ownedBuffer(range.end - range.start);
  if (first < 0) {
    out.set(body.subarray(range.start, range.end));
    return out;
  }
  // A view of the bytes written; wiping it wipes what was written (the rest was never written).
  return out.subarray(0, unescapeInto(body, range.start, range.end, first, out));
}

/**
 * Calls `use` with the content of the JSON string `range` of `body`,
 * unescaped, as `bytes[from, to)`: the body itself when the string holds no
 * escape (no copy), else a copy of its own, wiped once `use` returns.
 */
export function withUnescaped<T>(body: Uint8Array, range: Range, use: (bytes: Uint8Array, from: number, to: number) => T): T {
  const first = firstEscape(body, range.start, range.end);
  if (first < 0) return use(body, range.start, range.end);
  const out = ownedBuffer(range.end - range.start);
  try {
    return use(out, 0, unescapeInto(body, range.start, range.end, first, out));
  } finally {
    wipe(out);
  }
}
