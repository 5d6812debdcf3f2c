/**
 * The pre-check for text both Typst engines crash on, run by the worker on
 * the template and on every string of `data` before any compile (both are
 * JSON string content in the body's bytes; nothing becomes a JavaScript
 * string). Only a string of more than 65,535 bytes can hold a hazard: data
 * shown to have none that long (stringsAtMost) is not walked, the rest is
 * walked once, constant work per byte.
 *
 * What crashes, measured on Typst 0.11.1 and 0.14.2:
 *
 * - Typst stores where each glyph's text is inside its line's text run as
 *   16-bit offsets, saturated at 65,535. The PDF export then cuts the run's
 *   text at byte 65,535, and panics when that byte is inside a character of
 *   more than one byte. A run of text with no place a line may break in is
 *   always one line, so such a run longer than 65,535 bytes crashes when
 *   its byte 65,535 is not the first byte of a character (`é` × 32,768
 *   does, `é` × 32,767 + `a` does not; `a` × 65,534 + `é` does).
 * - Typst 0.14's shaper keeps a mark's distance to its base in 16 signed
 *   bits: more than 32,767 combining marks after one base crash it (the
 *   engine can survive a single such cluster; two in a paragraph do not).
 *
 * A line may break here after ASCII white space and U+200B, and between two
 * ideographic characters (CJK, kana, Hangul syllables, emoji): a run of
 * them is broken into lines of the page's width, so a long run of Chinese
 * text without spaces is not refused. Text that is split into lines that
 * long only by a very wide page or a tiny font, and text a template makes
 * itself (`"é" * 40000`), are beyond a check of the request's bytes: they
 * still crash the worker, and count toward the key's crash limit.
 */
import { hex4, SIMPLE_ESCAPES } from './json-string.js';
import type { Range } from './layout.js';
import { BACKSLASH, QUOTE } from './ascii.js';

/** What the pre-check refuses: a run of text the PDF export cuts inside a character, or too many marks on one base. */
export type TextHazard = 'run' | 'marks';

export interface TextLimits {
  /** The byte of an unbroken run that must start a character (Typst's 16-bit offsets saturate here). */
  runByte: number;
  /** Combining marks one base may carry. */
  marksPerBase: number;
}

export const TEXT_LIMITS: TextLimits = { runByte: 65_535, marksPerBase: 32_767 };

const ZERO_WIDTH_SPACE = 0x200b;

/** ASCII bytes after which a line may break: space, tab, line feed, carriage return. */
const ASCII_BREAK = new Uint8Array(128);
for (const b of [0x20, 0x09, 0x0a, 0x0d]) ASCII_BREAK[b] = 1;

/** Characters between two of which a line may break (Unicode line-break class ID, the common blocks). */
export function isIdeographic(cp: number): boolean {
  return (
    (cp >= 0x2e80 && cp <= 0x2fff) ||
    (cp >= 0x3040 && cp <= 0x30ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x1f300 && cp <= 0x1f3fa) ||
    (cp >= 0x1f400 && cp <= 0x1f64f) ||
    (cp >= 0x1f680 && cp <= 0x1f6ff) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/**
 * Unicode's combining marks (general category M), a bit per code point, all
 * in planes 0, 1 and 14. Made once as a worker loads this module (about
 * 20 ms, before it is ready), not on a job's time; Unicode's properties only.
 */
const MARK_BITS = (() => {
  const bits = new Uint8Array(0x110000 >> 3);
  const mark = /^\p{M}$/u;
  for (const plane of [0, 0x10000, 0xe0000]) {
    for (let c = plane; c < plane + 0x10000; c++) if (mark.test(String.fromCodePoint(c))) bits[c >> 3]! |= 1 << (c & 7);
  }
  return bits;
})();

const isMark = (cp: number) => (MARK_BITS[cp >> 3]! & (1 << (cp & 7))) !== 0;

/** ASCII bytes that are neither a place to break, nor a quote, a backslash or a control character below space. */
const PLAIN = new Uint8Array(256);
for (let b = 0x21; b < 0x80; b++) PLAIN[b] = b === QUOTE || b === BACKSLASH ? 0 : 1;

/** Whether all four bytes of a word are PLAIN (bit tricks: no byte below 0x21, at or above 0x80, a quote or a backslash). */
const plainWord = (x: number) => {
  const quote = x ^ 0x22222222;
  const backslash = x ^ 0x5c5c5c5c;
  return ((x | ((x - 0x21212121) & ~x) | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash)) & 0x80808080) === 0;
};

/** UTF-8 length of a code point from a `\u` escape (an unpaired surrogate takes 3 bytes, as Typst would never see it). */
const utf8Length = (cp: number) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/**
 * Scans JSON string content, a string at a time, for the first hazard.
 * The state of the string being scanned lives in locals of the loop (the
 * hot path is plain ASCII), and the scanner is made once per body.
 */
class TextScan {
  hazard: TextHazard | undefined;
  /** The body as 32-bit words of its ArrayBuffer, for runs of plain ASCII; `wordBase` is the body's offset in it. */
  private readonly words: Int32Array;
  private readonly wordBase: number;

  constructor(
    private readonly body: Uint8Array,
    private readonly limits: TextLimits,
  ) {
    this.words = new Int32Array(body.buffer, 0, body.buffer.byteLength >> 2);
    this.wordBase = body.byteOffset;
  }

  /**
   * Scans the string content that starts at `at` (after its opening quote)
   * up to its closing quote or `end`, as a run of its own; returns the index
   * after the closing quote (or `end`). Escapes count as the characters
   * they stand for.
   */
  string(at: number, end: number): number {
    const { body, words, wordBase } = this;
    const { runByte, marksPerBase } = this.limits;
    /** Bytes since the last place a line may break. */
    let run = 0;
    /** Combining marks since the last base. */
    let marks = 0;
    /** The previous character was ideographic: a line may break before the next one that is. */
    let ideographic = false;
    const lastWord = (wordBase + end) >> 2;
    let i = at;
    while (i < end) {
      let b = body[i]!;
      let cp: number;
      let length: number;
      if (PLAIN[b] === 1) {
        // Plain ASCII, the common case: then four bytes at a time while the words hold nothing else.
        marks = 0;
        ideographic = false;
        i++;
        if (((wordBase + i) & 3) === 0) {
          const first = (wordBase + i) >> 2;
          let w = first;
          while (w < lastWord && plainWord(words[w]!)) w++;
          i = (w << 2) - wordBase;
          run += 1 + (w - first) * 4;
        } else run++;
        continue;
      }
      if (b < 0x80) {
        if (b === QUOTE) return i + 1;
        i++;
        if (b === BACKSLASH) {
          const e = body[i] ?? 0;
          const simple = SIMPLE_ESCAPES[e];
          const unit = e === 0x75 ? hex4(body, i + 1) : -1;
          if (simple !== undefined) {
            b = simple;
            i++;
          } else if (unit >= 0) {
            cp = unit;
            i += 5;
            if (cp >= 0xd800 && cp <= 0xdbff && body[i] === BACKSLASH && body[i + 1] === 0x75) {
              const low = hex4(body, i + 2);
              if (low >= 0xdc00 && low <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                i += 6;
              }
            }
            b = cp;
          }
          // Otherwise not an escape JSON allows (only in `data` left to Typst, which then refuses it): the backslash alone.
        }
        if (b < 0x80) {
          marks = 0;
          ideographic = false;
          run = ASCII_BREAK[b] === 1 ? 0 : run + 1;
          continue;
        }
        cp = b;
        length = utf8Length(cp);
      } else if (b < 0xe0) {
        // A multi-byte character (the body is valid UTF-8, checked by the server).
        cp = ((b & 0x1f) << 6) | (body[i + 1]! & 0x3f);
        length = 2;
        i += 2;
      } else if (b < 0xf0) {
        cp = ((b & 0x0f) << 12) | ((body[i + 1]! & 0x3f) << 6) | (body[i + 2]! & 0x3f);
        length = 3;
        i += 3;
      } else {
        cp = ((b & 0x07) << 18) | ((body[i + 1]! & 0x3f) << 12) | ((body[i + 2]! & 0x3f) << 6) | (body[i + 3]! & 0x3f);
        length = 4;
        i += 4;
      }
      const isIdeo = isIdeographic(cp);
      if (isIdeo && ideographic) run = 0;
      ideographic = isIdeo;
      if (run < runByte && run + length > runByte) this.hazard ??= 'run';
      run = cp === ZERO_WIDTH_SPACE ? 0 : run + length;
      marks = isMark(cp) ? marks + 1 : 0;
      if (marks > marksPerBase) this.hazard ??= 'marks';
    }
    return end;
  }
}

/**
 * Raw bytes of JSON string content too few to hold a hazard: a run counts
 * decoded bytes, which are never more than the raw ones (an escape is at
 * least as long as what it stands for), and a combining mark takes at least
 * two bytes.
 */
const hazardFree = (limits: TextLimits) => Math.min(limits.runByte, 2 * limits.marksPerBase + 1);

/** The hazard in the JSON string content `range` (between its quotes: the template), if any. */
export function stringHazard(body: Uint8Array, range: Range, limits: TextLimits = TEXT_LIMITS): TextHazard | undefined {
  if (range.end - range.start <= hazardFree(limits)) return undefined;
  const scan = new TextScan(body, limits);
  scan.string(range.start, range.end);
  return scan.hazard;
}

/**
 * Whether no string in `range` can have more than `most` bytes of content,
 * shown without walking the strings: every window of `most / 2 + 1` bytes
 * holds a quote with an even run of backslashes before it, which the scan
 * below takes as a string's edge, inside a string or out. A string's
 * content holds no edge, so it is shorter than two windows. The quotes are
 * found with Buffer's indexOf (memchr): data of many short strings, most
 * JSON, costs microseconds per megabyte where walking it costs milliseconds.
 * A window with no such quote among its first few ends the attempt (each
 * window is looked at once: linear), and the strings are walked.
 */
export function stringsAtMost(body: Uint8Array, range: Range, most: number): boolean {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.length);
  const window = (most >> 1) + 1;
  for (let from = range.start; from + window <= range.end; from += window) {
    let quote = bytes.indexOf(QUOTE, from);
    for (let tries = 0; ; tries++) {
      if (quote < 0 || quote >= from + window || tries === 8) return false;
      let k = quote;
      while (k > range.start && bytes[k - 1] === BACKSLASH) k--;
      if ((quote - k) % 2 === 0) break;
      quote = bytes.indexOf(QUOTE, quote + 1);
    }
  }
  return true;
}

/**
 * The first hazard in any string (keys too) of the JSON value `range` (the
 * `data` object): each string is a run of its own. Bytes outside strings
 * are skipped; a string is entered at each quote met there.
 */
export function valueHazard(body: Uint8Array, range: Range, limits: TextLimits = TEXT_LIMITS): TextHazard | undefined {
  if (stringsAtMost(body, range, hazardFree(limits))) return undefined;
  const scan = new TextScan(body, limits);
  const { end } = range;
  let i = range.start;
  while (i < end && scan.hazard === undefined) {
    if (body[i] === QUOTE) i = scan.string(i + 1, end);
    else i++;
  }
  return scan.hazard;
}
