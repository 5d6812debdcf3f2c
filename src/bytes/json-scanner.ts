/**
 * A JSON scanner over bytes: it checks values (RFC 8259; UTF-8 is checked
 * for the whole body beforehand) and says where they end, without making a
 * JavaScript string or object of them. One scanner per body; its state (the
 * body's words, the nesting stack, the first unpaired surrogate escape) is
 * its own, so checks never share anything.
 *
 * Hand-written because the body must never become a JavaScript string or
 * object in the server (a string cannot be wiped from memory), and no kept
 * JSON library validates and locates over bytes without making them. It
 * accepts exactly what `JSON.parse` accepts (the property tests in
 * test/body-check.test.ts hold it to that), with no limit on nesting (an
 * explicit stack, no recursion).
 */
import { JSON_FAULTS, type JsonFault } from '../messages.js';
import { hex4 } from './json-string.js';
import type { Kind, Range } from './layout.js';
import { BACKSLASH, CLOSE_BRACKET, CLOSE_BRACE, COLON, COMMA, OPEN_BRACKET, OPEN_BRACE, QUOTE } from './ascii.js';

/** Where the JSON text breaks, and how (the words are messages.ts's JSON_FAULTS; they go into the 400: invalidJson). */
export class JsonError extends Error {
  constructor(
    readonly what: JsonFault,
    readonly at: number,
  ) {
    super(what);
  }
}

/** Bytes that end the plain run of a string: the quote, the backslash, and control characters. */
const STRING_STOP = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) STRING_STOP[b] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;

/** Whether a 32-bit word holds a quote, a backslash or a byte below 0x20 (the classic "has byte" bit tricks). */
const stops = (x: number) => {
  const quote = x ^ 0x22222222;
  const backslash = x ^ 0x5c5c5c5c;
  return (((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash) | ((x - 0x20202020) & ~x)) & 0x80808080;
};

export const fault = (body: Uint8Array, i: number) =>
  new JsonError(i >= body.length ? JSON_FAULTS.unexpectedEnd : JSON_FAULTS.unexpectedCharacter, i);

/** A JSON number at `at`: returns the index after it. */
function scanNumber(body: Uint8Array, at: number): number {
  const length = body.length;
  let i = at;
  let b = body[i]!;
  if (b === 0x2d) b = body[++i]!;
  if (b === 0x30) i++;
  else if (i < length && b >= 0x31 && b <= 0x39) {
    do b = body[++i]!;
    while (i < length && b >= 0x30 && b <= 0x39);
  } else throw new JsonError(JSON_FAULTS.invalidNumber, i);
  if (body[i] === 0x2e) {
    b = body[++i]!;
    if (!(i < length && b >= 0x30 && b <= 0x39)) throw new JsonError(JSON_FAULTS.invalidNumber, i);
    do b = body[++i]!;
    while (i < length && b >= 0x30 && b <= 0x39);
  }
  b = body[i]!;
  if (i < length && (b === 0x65 || b === 0x45)) {
    b = body[++i]!;
    if (b === 0x2b || b === 0x2d) b = body[++i]!;
    if (!(i < length && b >= 0x30 && b <= 0x39)) throw new JsonError(JSON_FAULTS.invalidNumber, i);
    do b = body[++i]!;
    while (i < length && b >= 0x30 && b <= 0x39);
  }
  return i;
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

function scanLiteral(body: Uint8Array, at: number, word: number[]): number {
  for (let k = 0; k < word.length; k++) if (body[at + k] !== word[k]) throw fault(body, at + k);
  return at + word.length;
}

export function skipWhitespace(body: Uint8Array, at: number): number {
  let i = at;
  // Every byte that is not whitespace or a control character (an error later) is above 0x20.
  while (i < body.length && body[i]! <= 0x20) {
    const b = body[i];
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) break;
    i++;
  }
  return i;
}

/** 1 for the ASCII digits. */
const DIGIT = new Uint8Array(256);
for (let b = 0x30; b <= 0x39; b++) DIGIT[b] = 1;

/** Plain string bytes read one at a time before a run is taken a word at a time. */
const SHORT_RUN = 16;

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

export const kindAt = (body: Uint8Array, at: number): Kind => {
  const b = body[at];
  return b === OPEN_BRACE
    ? 'object'
    : b === OPEN_BRACKET
      ? 'array'
      : b === QUOTE
        ? 'string'
        : b === 0x2d || (b! >= 0x30 && b! <= 0x39)
          ? 'number'
          : 'literal';
};

export class JsonScanner {
  /**
   * The body as 32-bit words of its ArrayBuffer: plain runs of strings are
   * skipped four bytes at a time (a byte loop is four times slower, and a
   * 9 MB body is mostly strings). `wordBase` is the body's offset in that
   * ArrayBuffer; only words wholly inside the body are read.
   */
  private readonly words: Int32Array;
  private readonly wordBase: number;
  /** Open containers of the value being skipped: 1 object, 2 array. Grown as deep as the body nests. */
  private stack: Uint8Array = new Uint8Array(64);
  /** The first unpaired surrogate escape met since the caller last set it to -1 (byte of its `\`), or -1. */
  loneSurrogate = -1;

  /**
   * A scanner over no request's bytes, kept for the life of the process (as
   * long as the class). V8's optimized code for the scanner's methods refers
   * weakly to the hidden class its instances share, and that class lives
   * only as long as one of them: the full collection the server runs once
   * it is quiet (retention/heap-scrub.ts) found none, freed it and threw the
   * optimized code away ("embedded weak objects cleared"), so the first
   * request after every quiet spell paid for compiling it all again: 10 ms
   * of the server's CPU for a 200-row report instead of 2.5 (measured at
   * c=1, blocks of 30 requests 300 ms apart).
   */
  static readonly kept = new JsonScanner(Buffer.alloc(8));

  constructor(readonly body: Uint8Array) {
    this.words = new Int32Array(body.buffer, 0, body.buffer.byteLength >> 2);
    this.wordBase = body.byteOffset;
  }

  /**
   * Checks the JSON value at `at` (after any whitespace) and returns the
   * index after it. Iterative: any depth, bounded only by memory. The fast
   * pass does the work; only a value it finds invalid is gone over again by
   * the exact pass, which says what is wrong and where.
   */
  skipValue(at: number): number {
    const end = this.fastSkip(at);
    return end >= 0 ? end : this.exactSkip(at);
  }

  /**
   * A JSON string whose content starts at `at` (after the opening quote):
   * checks it and returns the index after its closing quote. Unpaired
   * surrogate escapes are noted in `loneSurrogate` (the first one).
   */
  scanString(at: number): number {
    const { body, words, wordBase } = this;
    const length = body.length;
    const lastWord = (wordBase + length) >> 2;
    let i = at;
    for (;;) {
      // The common case first: plain bytes (UTF-8 was checked for the whole body), a word at a time.
      while (i < length && ((wordBase + i) & 3) !== 0 && STRING_STOP[body[i]!] === 0) i++;
      if (i < length && ((wordBase + i) & 3) === 0) {
        let w = (wordBase + i) >> 2;
        while (w < lastWord && stops(words[w]!) === 0) w++;
        i = (w << 2) - wordBase;
        while (i < length && STRING_STOP[body[i]!] === 0) i++;
      }
      if (i >= length) throw new JsonError(JSON_FAULTS.unterminatedString, length);
      const b = body[i]!;
      if (b === QUOTE) return i + 1;
      if (b < 0x20) throw new JsonError(JSON_FAULTS.controlCharacter, i);
      switch (body[i + 1]) {
        case 0x22:
        case 0x5c:
        case 0x2f:
        case 0x62:
        case 0x66:
        case 0x6e:
        case 0x72:
        case 0x74:
          i += 2;
          continue;
        case 0x75: {
          const taken = this.unicodeEscape(i);
          if (taken < 0) throw new JsonError(JSON_FAULTS.invalidEscape, i);
          i += taken;
          continue;
        }
        default:
          throw new JsonError(i + 1 >= length ? JSON_FAULTS.unterminatedString : JSON_FAULTS.invalidEscape, i);
      }
    }
  }

  /**
   * The members of the object at `at`, each handed to `take` as it is
   * scanned: its name, its value (a string's content, between its quotes)
   * and the value's kind. Returns the index after the object.
   */
  scanMembers(at: number, take: (name: Range, value: Range, kind: Kind) => void): number {
    const body = this.body;
    let i = skipWhitespace(body, at + 1);
    if (body[i] === CLOSE_BRACE) return i + 1;
    for (;;) {
      if (body[i] !== QUOTE) throw fault(body, i);
      const nameEnd = this.scanString(i + 1);
      const name = { start: i + 1, end: nameEnd - 1 };
      i = skipWhitespace(body, nameEnd);
      if (body[i] !== COLON) throw fault(body, i);
      i = skipWhitespace(body, i + 1);
      const kind = kindAt(body, i);
      const end = this.skipValue(i);
      take(name, kind === 'string' ? { start: i + 1, end: end - 1 } : { start: i, end }, kind);
      i = skipWhitespace(body, end);
      if (body[i] === CLOSE_BRACE) return i + 1;
      if (body[i] !== COMMA) throw fault(body, i);
      i = skipWhitespace(body, i + 1);
    }
  }

  /**
   * Bytes taken by the `\uXXXX` escape at `i`: 12 for a surrogate pair, 6
   * otherwise, -1 if its digits are not hex. Notes the first unpaired
   * surrogate in `loneSurrogate`.
   */
  private unicodeEscape(i: number): number {
    const body = this.body;
    const unit = hex4(body, i + 2);
    if (unit < 0) return -1;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = body[i + 6] === BACKSLASH && body[i + 7] === 0x75 ? hex4(body, i + 8) : -1;
      if (next >= 0xdc00 && next <= 0xdfff) return 12;
      if (this.loneSurrogate < 0) this.loneSurrogate = i;
    } else if (unit >= 0xdc00 && unit <= 0xdfff && this.loneSurrogate < 0) this.loneSurrogate = i;
    return 6;
  }

  /** A container opened at depth `depth`: 1 object, 2 array, on a stack grown as needed. Returns the stack. */
  private push(depth: number, container: number): Uint8Array {
    let stack = this.stack;
    if (depth === stack.length) {
      stack = new Uint8Array(stack.length * 2);
      stack.set(this.stack);
      this.stack = stack;
    }
    stack[depth] = container;
    return stack;
  }

  /**
   * A JSON string whose content starts at `at`: the index after its closing
   * quote, or -1 if it is not a valid string. Notes unpaired surrogate
   * escapes as scanString does. Short strings (most keys and values) are
   * read a byte at a time; a run past SHORT_RUN bytes goes on a word at a time.
   */
  private fastString(body: Uint8Array, at: number, length: number): number {
    // Kept small, so that it is inlined where it is called: a short string without escapes ends here.
    const limit = Math.min(at + SHORT_RUN, length);
    let i = at;
    while (i < limit && STRING_STOP[body[i]!] === 0) i++;
    return i < limit && body[i] === QUOTE ? i + 1 : this.stringRest(body, i, length);
  }

  /** fastString from `at` on, for long runs and escapes. */
  private stringRest(body: Uint8Array, at: number, length: number): number {
    let i = at;
    for (;;) {
      const limit = Math.min(i + SHORT_RUN, length);
      while (i < limit && STRING_STOP[body[i]!] === 0) i++;
      if (i === limit) {
        if (i >= length) return -1;
        const { words, wordBase } = this;
        while (((wordBase + i) & 3) !== 0 && STRING_STOP[body[i]!] === 0) i++;
        if (((wordBase + i) & 3) === 0) {
          const lastWord = (wordBase + length) >> 2;
          let w = (wordBase + i) >> 2;
          while (w < lastWord && stops(words[w]!) === 0) w++;
          i = (w << 2) - wordBase;
          while (i < length && STRING_STOP[body[i]!] === 0) i++;
        }
        if (i >= length) return -1;
      }
      const b = body[i]!;
      if (b === QUOTE) return i + 1;
      if (b !== BACKSLASH) return -1;
      const e = body[i + 1];
      if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i += 2;
        continue;
      }
      if (e !== 0x75) return -1;
      const taken = this.unicodeEscape(i);
      if (taken < 0) return -1;
      i += taken;
    }
  }

  /**
   * The JSON value at `at` (after any whitespace): the index after it, or -1
   * if it is not valid JSON. One loop with its state in locals, no error
   * bookkeeping: what most of a large body goes through.
   */
  private fastSkip(at: number): number {
    const body = this.body;
    const length = body.length;
    let depth = 0;
    let stack = this.stack;
    let i = at;
    let b = 0;
    for (;;) {
      // A value starts at i, after any whitespace.
      if (i >= length) return -1;
      b = body[i]!;
      while (isSpace(b) && ++i < length) b = body[i]!;
      if (b === QUOTE) {
        i = this.fastString(body, i + 1, length);
        if (i < 0) return -1;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        i++;
        while (i < length && isSpace(body[i]!)) i++;
        const close = b === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
        if (i < length && body[i] === close) i++;
        else {
          stack = this.push(depth++, b === OPEN_BRACE ? 1 : 2);
          if (b === OPEN_BRACE) {
            i = this.fastKey(body, i, length);
            if (i < 0) return -1;
          }
          continue;
        }
      } else if (b === 0x2d || DIGIT[b] === 1) {
        if (b === 0x2d && ++i >= length) return -1;
        b = body[i]!;
        if (b === 0x30) i++;
        else if (DIGIT[b] === 1) while (++i < length && DIGIT[body[i]!] === 1);
        else return -1;
        if (i < length && body[i] === 0x2e) {
          if (++i >= length || DIGIT[body[i]!] !== 1) return -1;
          while (++i < length && DIGIT[body[i]!] === 1);
        }
        if (i < length && (body[i] === 0x65 || body[i] === 0x45)) {
          if (++i < length && (body[i] === 0x2b || body[i] === 0x2d)) i++;
          if (i >= length || DIGIT[body[i]!] !== 1) return -1;
          while (++i < length && DIGIT[body[i]!] === 1);
        }
      } else if (b === 0x74) {
        if (body[i + 1] !== 0x72 || body[i + 2] !== 0x75 || body[i + 3] !== 0x65) return -1;
        i += 4;
      } else if (b === 0x66) {
        if (body[i + 1] !== 0x61 || body[i + 2] !== 0x6c || body[i + 3] !== 0x73 || body[i + 4] !== 0x65) return -1;
        i += 5;
      } else if (b === 0x6e) {
        if (body[i + 1] !== 0x75 || body[i + 2] !== 0x6c || body[i + 3] !== 0x6c) return -1;
        i += 4;
      } else return -1;
      // A value ended at i: a comma, or the end of the containers it completes.
      for (;;) {
        if (depth === 0) return i;
        while (i < length && isSpace(body[i]!)) i++;
        if (i >= length) return -1;
        b = body[i]!;
        const top = stack[depth - 1];
        if (b === COMMA) {
          i++;
          if (top === 1) {
            i = this.fastKey(body, i, length);
            if (i < 0) return -1;
          }
          break;
        }
        if ((top === 1 && b === CLOSE_BRACE) || (top === 2 && b === CLOSE_BRACKET)) {
          depth--;
          i++;
          continue;
        }
        return -1;
      }
    }
  }

  /** An object key at `at` (after any whitespace) and its colon: where its value starts, or -1. */
  private fastKey(body: Uint8Array, at: number, length: number): number {
    let i = at;
    while (i < length && isSpace(body[i]!)) i++;
    if (i >= length || body[i] !== QUOTE) return -1;
    i = this.fastString(body, i + 1, length);
    if (i < 0) return -1;
    while (i < length && isSpace(body[i]!)) i++;
    if (i >= length || body[i] !== COLON) return -1;
    return i + 1;
  }

  /** skipValue's exact pass: throws JsonError at the first fault. */
  private exactSkip(at: number): number {
    const body = this.body;
    const length = body.length;
    let depth = 0;
    let i = skipWhitespace(body, at);
    for (;;) {
      // A value starts at i.
      let b = body[i];
      if (b === QUOTE) i = this.scanString(i + 1);
      else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        i = skipWhitespace(body, i + 1);
        const close = b === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
        if (body[i] === close) i++;
        else {
          this.push(depth++, b === OPEN_BRACE ? 1 : 2);
          if (b === OPEN_BRACE) i = this.afterKey(i);
          continue;
        }
      } else if (b === 0x2d || (b !== undefined && b >= 0x30 && b <= 0x39)) i = scanNumber(body, i);
      else if (b === 0x74) i = scanLiteral(body, i, TRUE);
      else if (b === 0x66) i = scanLiteral(body, i, FALSE);
      else if (b === 0x6e) i = scanLiteral(body, i, NULL);
      else throw fault(body, i);
      // A value ended at i: a comma, or the end of the containers it completes.
      for (;;) {
        if (depth === 0) return i;
        i = skipWhitespace(body, i);
        b = body[i];
        const top = this.stack[depth - 1];
        if (b === COMMA) {
          i = skipWhitespace(body, i + 1);
          if (top === 1) i = this.afterKey(i);
          break;
        }
        if ((top === 1 && b === CLOSE_BRACE) || (top === 2 && b === CLOSE_BRACKET)) {
          depth--;
          i++;
          continue;
        }
        throw fault(body, i);
      }
      if (i >= length) throw fault(body, i);
    }
  }

  /** An object key at `at` and its colon: returns where its value starts. */
  private afterKey(at: number): number {
    const body = this.body;
    if (body[at] !== QUOTE) throw fault(body, at);
    const i = skipWhitespace(body, this.scanString(at + 1));
    if (body[i] !== COLON) throw fault(body, i);
    return skipWhitespace(body, i + 1);
  }
}
