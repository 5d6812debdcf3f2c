/**
 * Places in UTF-8 text, by one rule everywhere the API names a place
 * (template errors, warnings, invalid JSON, asset values): lines end at LF,
 * CRLF or CR, as Typst counts them, and columns count characters (code
 * points), both from 1.
 */

import type { Place } from '../api-values.js';
import { hex4 } from './json-string.js';
import type { Range } from './layout.js';
import { BACKSLASH, CR, LF } from './ascii.js';

/** A byte that starts a character: anything but a UTF-8 continuation byte. */
const startsCharacter = (b: number) => (b & 0xc0) !== 0x80;

/** Bytes of the UTF-8 character whose first byte is `lead` (of valid UTF-8). */
export const utf8Width = (lead: number) => (lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2);

/** Characters in `text[from, to)`. */
export function characterCount(text: Uint8Array, from = 0, to = text.length): number {
  let n = 0;
  for (let i = from; i < to; i++) if (startsCharacter(text[i]!)) n++;
  return n;
}

/** 1-based line and column of byte `at` of the text that starts at byte `from`. */
export function placeOf(text: Uint8Array, at: number, from = 0): Place {
  let line = 1;
  let lineStart = from;
  for (let i = from; i < at; i++) {
    const b = text[i]!;
    if (b === LF || (b === CR && text[i + 1] !== LF)) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: characterCount(text, lineStart, at) + 1 };
}

/** The UTF-8 byte order mark, which a template may start with. */
const BOM = [0xef, 0xbb, 0xbf] as const;

/** Bytes of a byte order mark at the start of `text[from, to)`: 3 or 0. */
export function bomLength(text: Uint8Array, from = 0, to = text.length): number {
  return to - from >= 3 && text[from] === BOM[0] && text[from + 1] === BOM[1] && text[from + 2] === BOM[2] ? 3 : 0;
}

/**
 * The byte where the 0-based `line` and `column` (in characters) of `text`
 * start, by placeOf's rule; the end of the text if it is shorter.
 */
export function offsetOf(text: Uint8Array, line: number, column: number): number {
  let at = 0;
  for (let l = 0; l < line && at < text.length; at++) {
    if (text[at] === LF || (text[at] === CR && text[at + 1] !== LF)) l++;
  }
  for (let c = 0; c < column && at < text.length; c++) {
    at++;
    while (at < text.length && !startsCharacter(text[at]!)) at++;
  }
  return at;
}

/**
 * Line and column, in the text as JSON.parse gives it, of byte `at` of the
 * JSON string whose content (between its quotes) is `range`: an escape
 * counts as the one character it stands for, and \n, \r (and \r\n) end
 * lines, as in placeOf.
 */
export function placeInJsonString(body: Uint8Array, range: Range, at: number): Place {
  let line = 1;
  let column = 1;
  let afterCr = false;
  for (let i = range.start; i < at; ) {
    let char = body[i]!;
    let width = 1;
    if (char === BACKSLASH) {
      const escaped = body[i + 1]!;
      width = escaped === 0x75 ? 6 : 2;
      char = escaped === 0x6e ? 0x0a : escaped === 0x72 ? 0x0d : escaped === 0x75 ? hex4(body, i + 2) : escaped;
      // A surrogate pair is one character.
      if (char >= 0xd800 && char <= 0xdbff && body[i + 6] === BACKSLASH && body[i + 7] === 0x75) {
        const low = hex4(body, i + 8);
        if (low >= 0xdc00 && low <= 0xdfff) width = 12;
      }
    } else if (char >= 0x80) {
      width = utf8Width(char);
    }
    if (char === 0x0a) {
      if (!afterCr) line++;
      column = 1;
    } else if (char === 0x0d) {
      line++;
      column = 1;
    } else column++;
    afterCr = char === 0x0d;
    i += width;
  }
  return { line, column };
}

/**
 * The offset of the first byte that breaks UTF-8 (only called once the body
 * is known to be invalid): the start of the first sequence that is not a
 * well-formed character (RFC 3629: no overlong forms, no surrogates, at
 * most U+10FFFF), or is cut short by the end.
 */
export function firstInvalidUtf8(body: Uint8Array, start: number): number {
  const length = body.length;
  for (let i = start; i < length; ) {
    const b = body[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // Continuation bytes after the lead, and the range of the first one.
    let more = 0;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) more = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      more = 2;
      if (b === 0xe0) low = 0xa0;
      else if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      more = 3;
      if (b === 0xf0) low = 0x90;
      else if (b === 0xf4) high = 0x8f;
    } else return i;
    if (i + more >= length) return i;
    const first = body[i + 1]!;
    if (first < low || first > high) return i;
    for (let k = 2; k <= more; k++) if ((body[i + k]! & 0xc0) !== 0x80) return i;
    i += more + 1;
  }
  return body.length;
}
