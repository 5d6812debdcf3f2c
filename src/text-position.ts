/**
 * Places in UTF-8 text, by one rule everywhere the API names a place
 * (template errors, warnings, invalid JSON, asset values): lines end at LF,
 * CRLF or CR, as Typst counts them, and columns count characters (code
 * points), both from 1.
 */

const LF = 0x0a;
const CR = 0x0d;

/** A byte that starts a character: anything but a UTF-8 continuation byte. */
const startsCharacter = (b: number) => (b & 0xc0) !== 0x80;

/** Characters in `text[from, to)`. */
export function characterCount(text: Uint8Array, from = 0, to = text.length): number {
  let n = 0;
  for (let i = from; i < to; i++) if (startsCharacter(text[i]!)) n++;
  return n;
}

/** 1-based line and column of byte `at` of the text that starts at byte `from`. */
export function placeOf(text: Uint8Array, at: number, from = 0): { line: number; column: number } {
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
