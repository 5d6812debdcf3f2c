/**
 * The request body's check, byte by byte: it is one valid JSON text (RFC
 * 8259, UTF-8), a top-level object whose `data` is an object, whose
 * `template` is a string, whose optional `assets` maps file names to
 * base64, whose optional `typst` names an engine and whose optional `pdf`
 * holds export options; and where those fields are, as byte ranges of the
 * body (`typst` and `pdf` as the fixed values they name).
 *
 * Hand-written because the body must never become a JavaScript string or
 * object in the server (a string cannot be wiped from memory), and no kept
 * JSON library validates and locates over bytes without making them. It
 * accepts exactly what `JSON.parse` accepts (the property tests hold it to
 * that), with no limit on nesting (an explicit stack, no recursion). As with
 * `JSON.parse` and Typst's `json()`, of duplicate keys the last one counts.
 */
import { isUtf8 } from 'node:buffer';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../config.js';
import { AssetTable } from './asset-table.js';
import { firstEscape, hex4, unescapeJsonString } from './json-string.js';
import { MESSAGES } from '../messages.js';
import { bomLength, placeOf } from '../text-position.js';
import { ENGINE_IDS, ENGINE_VERSIONS, type EngineId, PDF_STANDARDS, type PdfOptions, type PdfStandard } from '../render/typst-version.js';

/** Byte offsets into the body, end exclusive. */
export interface Range {
  start: number;
  end: number;
}

/** One asset: the raw bytes of its key and of its value string, between their quotes (escapes not decoded). */
export interface AssetEntry {
  name: Range;
  value: Range;
}

export interface BodyLayout {
  /** The `data` object, from `{` to `}`. */
  data: Range;
  /** The content of the `template` string, between its quotes. */
  template: Range;
  /** The assets, in order of first appearance, each name once (its last value counts). */
  assets: AssetEntry[];
  /** The engine the request names; absent: the operator's default. */
  typst?: EngineId;
  /** PDF export options the request names (Typst 0.14 only; the worker refuses them on 0.11). */
  pdf?: PdfOptions;
}

/**
 * Why a body is refused (always 400). A message about an asset names it,
 * but the name is request content: it stays bytes of the body, between two
 * fixed parts (see error-body.ts).
 */
export type BodyError = { status: 400; message: string } | { status: 400; before: string; name: Range; after: string };

export type BodyCheck = { ok: true; layout: BodyLayout } | { ok: false; error: BodyError };

export interface CheckOptions {
  /** An image asset whose header declares more pixels is refused (MAX_IMAGE_PIXELS). */
  maxImagePixels: number;
}

const EXPECTED_OBJECT = 'Request body must be a JSON object with fields "data" and "template"';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

export type Kind = 'object' | 'array' | 'string' | 'number' | 'literal';

/** A top-level field's occurrence: where its value is and what kind it is. */
interface Field {
  value: Range;
  kind: Kind;
  /** Only for `template`: where its first unpaired surrogate escape is, if any (byte of the `\`). */
  loneSurrogate?: number;
  /** Only for `data`: whether it holds an unpaired surrogate escape anywhere. */
  hasLoneSurrogate?: boolean;
  /** Only for `assets`: its entries, met as they were scanned. */
  table?: AssetTable;
  /** Only for `pdf`: its members, as written. */
  entries?: { name: Range; value: Range; kind: Kind }[];
}

class JsonError extends Error {
  constructor(
    readonly what: string,
    readonly at: number,
  ) {
    super(what);
  }
}

/** Which top-level field a key names, compared after JSON unescaping. */
const FIELD_NAMES = ['data', 'template', 'assets', 'typst', 'pdf'] as const;
type FieldName = (typeof FIELD_NAMES)[number];
const FIELD_BYTES = FIELD_NAMES.map((name) => Buffer.from(name));

/** Bytes that end the plain run of a string: the quote, the backslash, and control characters. */
const STRING_STOP = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) STRING_STOP[b] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;

/** The first unpaired surrogate escape seen by the last scan that asked for it (byte of its `\`), or -1. */
let loneSurrogate = -1;

/**
 * The body being checked, as 32-bit words of its ArrayBuffer: plain runs of
 * strings are skipped four bytes at a time (a byte loop is four times
 * slower, and a 9 MB body is mostly strings). `wordBase` is the body's
 * offset in that ArrayBuffer; only words wholly inside the body are read.
 */
let words: Int32Array = new Int32Array(0);
let wordBase = 0;

function useWordsOf(body: Uint8Array): void {
  words = new Int32Array(body.buffer, 0, body.buffer.byteLength >> 2);
  wordBase = body.byteOffset;
}

/** Whether a 32-bit word holds a quote, a backslash or a byte below 0x20 (the classic "has byte" bit tricks). */
const stops = (x: number) => {
  const quote = x ^ 0x22222222;
  const backslash = x ^ 0x5c5c5c5c;
  return (((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash) | ((x - 0x20202020) & ~x)) & 0x80808080;
};

/**
 * Bytes taken by the `\uXXXX` escape at `i`: 12 for a surrogate pair, 6
 * otherwise, -1 if its digits are not hex. Notes the first unpaired
 * surrogate in `loneSurrogate`.
 */
function unicodeEscape(body: Uint8Array, i: number): number {
  const unit = hex4(body, i + 2);
  if (unit < 0) return -1;
  if (unit >= 0xd800 && unit <= 0xdbff) {
    const next = body[i + 6] === BACKSLASH && body[i + 7] === 0x75 ? hex4(body, i + 8) : -1;
    if (next >= 0xdc00 && next <= 0xdfff) return 12;
    if (loneSurrogate < 0) loneSurrogate = i;
  } else if (unit >= 0xdc00 && unit <= 0xdfff && loneSurrogate < 0) loneSurrogate = i;
  return 6;
}

/**
 * A JSON string whose content starts at `at` (after the opening quote):
 * checks it and returns the index after its closing quote. Unpaired
 * surrogate escapes are noted in `loneSurrogate` (the first one).
 */
function scanString(body: Uint8Array, at: number): number {
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
    if (i >= length) throw new JsonError('unterminated string', length);
    const b = body[i]!;
    if (b === QUOTE) return i + 1;
    if (b < 0x20) throw new JsonError('control character in string', i);
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
        const taken = unicodeEscape(body, i);
        if (taken < 0) throw new JsonError('invalid escape', i);
        i += taken;
        continue;
      }
      default:
        throw new JsonError(i + 1 >= length ? 'unterminated string' : 'invalid escape', i);
    }
  }
}

const fault = (body: Uint8Array, i: number) => new JsonError(i >= body.length ? 'unexpected end of input' : 'unexpected character', i);

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
  } else throw new JsonError('invalid number', i);
  if (body[i] === 0x2e) {
    b = body[++i]!;
    if (!(i < length && b >= 0x30 && b <= 0x39)) throw new JsonError('invalid number', i);
    do b = body[++i]!;
    while (i < length && b >= 0x30 && b <= 0x39);
  }
  b = body[i]!;
  if (i < length && (b === 0x65 || b === 0x45)) {
    b = body[++i]!;
    if (b === 0x2b || b === 0x2d) b = body[++i]!;
    if (!(i < length && b >= 0x30 && b <= 0x39)) throw new JsonError('invalid number', i);
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

function skipWhitespace(body: Uint8Array, at: number): number {
  let i = at;
  // Every byte that is not whitespace or a control character (an error later) is above 0x20.
  while (i < body.length && body[i]! <= 0x20) {
    const b = body[i];
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) break;
    i++;
  }
  return i;
}

/** Open containers of the value being skipped: 1 object, 2 array. Grown as deep as the body nests. */
let stack = new Uint8Array(256);

/**
 * Checks the JSON value at `at` (after any whitespace) and returns the
 * index after it. Iterative: any depth, bounded only by memory. The fast
 * pass below does the work; only a value it finds invalid is gone over
 * again by the exact pass, which says what is wrong and where.
 */
function skipValue(body: Uint8Array, at: number): number {
  const end = fastSkip(body, at);
  return end >= 0 ? end : exactSkip(body, at);
}

/** 1 for the ASCII digits. */
const DIGIT = new Uint8Array(256);
for (let b = 0x30; b <= 0x39; b++) DIGIT[b] = 1;

/** Plain string bytes read one at a time before a run is taken a word at a time. */
const SHORT_RUN = 16;

/**
 * A JSON string whose content starts at `at`: the index after its closing
 * quote, or -1 if it is not a valid string. Notes unpaired surrogate
 * escapes as scanString does. Short strings (most keys and values) are
 * read a byte at a time; a run past SHORT_RUN bytes goes on a word at a time.
 */
function fastString(body: Uint8Array, at: number, length: number): number {
  // Kept small, so that it is inlined where it is called: a short string without escapes ends here.
  const limit = Math.min(at + SHORT_RUN, length);
  let i = at;
  while (i < limit && STRING_STOP[body[i]!] === 0) i++;
  return i < limit && body[i] === QUOTE ? i + 1 : stringRest(body, i, length);
}

/** fastString from `at` on, for long runs and escapes. */
function stringRest(body: Uint8Array, at: number, length: number): number {
  let i = at;
  for (;;) {
    const limit = Math.min(i + SHORT_RUN, length);
    while (i < limit && STRING_STOP[body[i]!] === 0) i++;
    if (i === limit) {
      if (i >= length) return -1;
      const base = wordBase;
      while (((base + i) & 3) !== 0 && STRING_STOP[body[i]!] === 0) i++;
      if (((base + i) & 3) === 0) {
        const w32 = words;
        const lastWord = (base + length) >> 2;
        let w = (base + i) >> 2;
        while (w < lastWord && stops(w32[w]!) === 0) w++;
        i = (w << 2) - base;
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
    const taken = unicodeEscape(body, i);
    if (taken < 0) return -1;
    i += taken;
  }
}

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * The JSON value at `at` (after any whitespace): the index after it, or -1
 * if it is not valid JSON. One loop with its state in locals, no error
 * bookkeeping: what most of a large body goes through.
 */
function fastSkip(body: Uint8Array, at: number): number {
  const length = body.length;
  let depth = 0;
  let i = at;
  let b = 0;
  for (;;) {
    // A value starts at i, after any whitespace.
    if (i >= length) return -1;
    b = body[i]!;
    while (isSpace(b) && ++i < length) b = body[i]!;
    if (b === QUOTE) {
      i = fastString(body, i + 1, length);
      if (i < 0) return -1;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      i++;
      while (i < length && isSpace(body[i]!)) i++;
      const close = b === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
      if (i < length && body[i] === close) i++;
      else {
        if (depth === stack.length) {
          const grown = new Uint8Array(stack.length * 2);
          grown.set(stack);
          stack = grown;
        }
        stack[depth++] = b === OPEN_OBJECT ? 1 : 2;
        if (b === OPEN_OBJECT) {
          i = fastKey(body, i, length);
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
          i = fastKey(body, i, length);
          if (i < 0) return -1;
        }
        break;
      }
      if ((top === 1 && b === CLOSE_OBJECT) || (top === 2 && b === CLOSE_ARRAY)) {
        depth--;
        i++;
        continue;
      }
      return -1;
    }
  }
}

/** An object key at `at` (after any whitespace) and its colon: where its value starts, or -1. */
function fastKey(body: Uint8Array, at: number, length: number): number {
  let i = at;
  while (i < length && isSpace(body[i]!)) i++;
  if (i >= length || body[i] !== QUOTE) return -1;
  i = fastString(body, i + 1, length);
  if (i < 0) return -1;
  while (i < length && isSpace(body[i]!)) i++;
  if (i >= length || body[i] !== COLON) return -1;
  return i + 1;
}

/** skipValue's exact pass: throws JsonError at the first fault. */
function exactSkip(body: Uint8Array, at: number): number {
  const length = body.length;
  let depth = 0;
  let i = skipWhitespace(body, at);
  for (;;) {
    // A value starts at i.
    let b = body[i];
    if (b === QUOTE) i = scanString(body, i + 1);
    else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      i = skipWhitespace(body, i + 1);
      const close = b === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
      if (body[i] === close) i++;
      else {
        if (depth === stack.length) {
          const grown = new Uint8Array(stack.length * 2);
          grown.set(stack);
          stack = grown;
        }
        stack[depth++] = b === OPEN_OBJECT ? 1 : 2;
        if (b === OPEN_OBJECT) i = afterKey(body, i);
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
      const top = stack[depth - 1];
      if (b === COMMA) {
        i = skipWhitespace(body, i + 1);
        if (top === 1) i = afterKey(body, i);
        break;
      }
      if ((top === 1 && b === CLOSE_OBJECT) || (top === 2 && b === CLOSE_ARRAY)) {
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
function afterKey(body: Uint8Array, at: number): number {
  if (body[at] !== QUOTE) throw fault(body, at);
  const i = skipWhitespace(body, scanString(body, at + 1));
  if (body[i] !== COLON) throw fault(body, i);
  return skipWhitespace(body, i + 1);
}

/** Which of the top-level fields the raw key `body[start, end)` names, compared after unescaping. */
function fieldOf(body: Uint8Array, start: number, end: number): FieldName | undefined {
  if (firstEscape(body, start, end) < 0) {
    outer: for (let f = 0; f < FIELD_BYTES.length; f++) {
      const name = FIELD_BYTES[f]!;
      if (name.length !== end - start) continue;
      for (let i = 0; i < name.length; i++) if (body[start + i] !== name[i]) continue outer;
      return FIELD_NAMES[f];
    }
    return undefined;
  }
  const decoded = unescapeJsonString(body, { start, end });
  const found = FIELD_BYTES.findIndex((name) => name.equals(decoded));
  decoded.fill(0);
  return found < 0 ? undefined : FIELD_NAMES[found];
}

const kindAt = (body: Uint8Array, at: number): Kind => {
  const b = body[at];
  return b === OPEN_OBJECT
    ? 'object'
    : b === OPEN_ARRAY
      ? 'array'
      : b === QUOTE
        ? 'string'
        : b === 0x2d || (b! >= 0x30 && b! <= 0x39)
          ? 'number'
          : 'literal';
};

/**
 * The members of the object at `at` (the `assets` or `pdf` value), each
 * handed to `take` as it is scanned: its name, its value (a string's
 * content, between its quotes) and the value's kind.
 */
function scanMembers(body: Uint8Array, at: number, take: (name: Range, value: Range, kind: Kind) => void): number {
  let i = skipWhitespace(body, at + 1);
  if (body[i] === CLOSE_OBJECT) return i + 1;
  for (;;) {
    if (body[i] !== QUOTE) throw fault(body, i);
    const nameEnd = scanString(body, i + 1);
    const name = { start: i + 1, end: nameEnd - 1 };
    i = skipWhitespace(body, nameEnd);
    if (body[i] !== COLON) throw fault(body, i);
    i = skipWhitespace(body, i + 1);
    const kind = kindAt(body, i);
    const end = skipValue(body, i);
    take(name, kind === 'string' ? { start: i + 1, end: end - 1 } : { start: i, end }, kind);
    i = skipWhitespace(body, end);
    if (body[i] === CLOSE_OBJECT) return i + 1;
    if (body[i] !== COMMA) throw fault(body, i);
    i = skipWhitespace(body, i + 1);
  }
}

/**
 * Checks the JSON text in `body[start..]` and finds the last occurrence of
 * each field of the top-level object; throws JsonError at the first fault.
 */
function parse(body: Uint8Array, start: number, tables: AssetTable[]): { topIsObject: boolean; fields: Partial<Record<FieldName, Field>> } {
  const fields: Partial<Record<FieldName, Field>> = {};
  let i = skipWhitespace(body, start);
  if (body[i] !== OPEN_OBJECT) {
    const end = skipWhitespace(body, skipValue(body, i));
    if (end < body.length) throw new JsonError('unexpected data after the JSON value', end);
    return { topIsObject: false, fields };
  }
  i = skipWhitespace(body, i + 1);
  if (body[i] !== CLOSE_OBJECT) {
    for (;;) {
      if (body[i] !== QUOTE) throw fault(body, i);
      const keyEnd = scanString(body, i + 1);
      const name = fieldOf(body, i + 1, keyEnd - 1);
      i = skipWhitespace(body, keyEnd);
      if (body[i] !== COLON) throw fault(body, i);
      i = skipWhitespace(body, i + 1);
      const kind = kindAt(body, i);
      loneSurrogate = -1;
      let end: number;
      if (name === 'assets' && kind === 'object') {
        const table = new AssetTable(body);
        tables.push(table);
        end = scanMembers(body, i, (member, value, valueKind) => table.add(member, value, valueKind));
        fields.assets = { value: { start: i, end }, kind, table };
      } else if (name === 'pdf' && kind === 'object') {
        const entries: NonNullable<Field['entries']> = [];
        end = scanMembers(body, i, (member, value, valueKind) => entries.push({ name: member, value, kind: valueKind }));
        fields.pdf = { value: { start: i, end }, kind, entries };
      } else {
        end = skipValue(body, i);
        if (name === 'template' && kind === 'string') {
          fields.template = { value: { start: i + 1, end: end - 1 }, kind, loneSurrogate: loneSurrogate < 0 ? undefined : loneSurrogate };
        } else if (name !== undefined) {
          fields[name] = { value: { start: i, end }, kind, hasLoneSurrogate: loneSurrogate >= 0 };
        }
      }
      i = skipWhitespace(body, end);
      if (body[i] === CLOSE_OBJECT) break;
      if (body[i] !== COMMA) throw fault(body, i);
      i = skipWhitespace(body, i + 1);
    }
  }
  const end = skipWhitespace(body, i + 1);
  if (end < body.length) throw new JsonError('unexpected data after the JSON value', end);
  return { topIsObject: true, fields };
}

/**
 * Line and column, in the template text as JSON.parse gives it, of the
 * escape at `at` inside the template string `range`: escapes count as the
 * one character they stand for, and \n, \r (and \r\n) end lines.
 */
function templatePlace(body: Uint8Array, range: Range, at: number): { line: number; column: number } {
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
      width = char >= 0xf0 ? 4 : char >= 0xe0 ? 3 : 2;
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

const message = (text: string): BodyCheck => ({ ok: false, error: { status: 400, message: text } });
const isNull = (body: Uint8Array, field: Field) => field.kind === 'literal' && body[field.value.start] === 0x6e;

/** Which of `values` the JSON string `range` (between its quotes) equals after unescaping, compared as bytes. */
function oneOf<T extends string>(body: Uint8Array, range: Range, values: readonly T[]): T | undefined {
  const decoded = unescapeJsonString(body, range);
  const found = values.find((value) => decoded.equals(Buffer.from(value)));
  decoded.fill(0);
  return found;
}

const inQuotes = (value: Range): Range => ({ start: value.start + 1, end: value.end - 1 });
const ENGINE_NAMES = [...ENGINE_IDS, ...ENGINE_IDS.map((id) => ENGINE_VERSIONS[id])];
const PDF_KEYS = ['standard', 'tagged'] as const;

/** `typst`: "0.11" or "0.14", or the exact version either embeds. */
function checkTypst(body: Uint8Array, field: Field): EngineId | BodyCheck {
  const name = field.kind === 'string' ? oneOf(body, inQuotes(field.value), ENGINE_NAMES) : undefined;
  const engine = ENGINE_IDS.find((id) => id === name || ENGINE_VERSIONS[id] === name);
  return engine ?? message(MESSAGES.typstField);
}

/** `pdf`: an object of `standard` (one of Typst 0.14's) and `tagged` (a boolean); of a repeated key the last counts. */
function checkPdf(body: Uint8Array, field: Field): PdfOptions | BodyCheck {
  if (field.kind !== 'object') return message(MESSAGES.pdfField);
  const options: PdfOptions = {};
  for (const entry of field.entries!) {
    const key = oneOf(body, entry.name, PDF_KEYS);
    if (key === undefined) return message(MESSAGES.pdfKey);
    if (key === 'standard') {
      const standard = entry.kind === 'string' ? oneOf<PdfStandard>(body, entry.value, PDF_STANDARDS) : undefined;
      if (standard === undefined) return message(MESSAGES.pdfStandard);
      options.standard = standard;
    } else {
      const b = body[entry.value.start];
      if (entry.kind !== 'literal' || b === 0x6e) return message(MESSAGES.pdfTagged);
      options.tagged = b === 0x74;
    }
  }
  return options;
}

export function checkBody(body: Uint8Array, options: CheckOptions = { maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS }): BodyCheck {
  const start = bomLength(body);
  if (body.length === start) return message('Request body is empty: expected a JSON object with fields "data" and "template"');
  if (!isUtf8(body.subarray(start))) return message(`Request body is not valid UTF-8 (byte ${firstInvalidUtf8(body, start)})`);
  const tables: AssetTable[] = [];
  try {
    return checkFields(body, start, tables, options);
  } finally {
    for (const table of tables) table.wipe();
  }
}

function checkFields(body: Uint8Array, start: number, tables: AssetTable[], options: CheckOptions): BodyCheck {
  let result: ReturnType<typeof parse>;
  try {
    useWordsOf(body);
    result = parse(body, start, tables);
  } catch (error) {
    if (!(error instanceof JsonError)) throw error;
    const at = Math.min(error.at, body.length);
    const { line, column } = placeOf(body, at, start);
    return message(`Request body is not valid JSON: ${error.what} at line ${line}, column ${column} (byte ${at})`);
  } finally {
    words = new Int32Array(0); // not kept: it is a view of the body
  }
  if (!result.topIsObject) return message(EXPECTED_OBJECT);
  const { data, template, assets, typst, pdf } = result.fields;
  if (!data) return message('Missing required field "data": expected a JSON object');
  if (!template) return message('Missing required field "template": expected a string of Typst markup');
  if (data.kind !== 'object') return message('Field "data" must be a JSON object');
  if (template.kind !== 'string') return message('Field "template" must be a string of Typst markup');
  if (template.loneSurrogate !== undefined) {
    const { line, column } = templatePlace(body, template.value, template.loneSurrogate);
    const unit = hex4(body, template.loneSurrogate + 2)
      .toString(16)
      .toUpperCase();
    return message(
      `Field "template" contains an unpaired surrogate escape (\\u${unit}) on line ${line}, column ${column} of the template: Typst text must be valid Unicode`,
    );
  }
  if (data.hasLoneSurrogate)
    return message('Field "data" contains an unpaired surrogate escape (\\uD800 to \\uDFFF alone): Typst cannot read it');
  let engine: EngineId | undefined;
  if (typst && !isNull(body, typst)) {
    const checked = checkTypst(body, typst);
    if (typeof checked !== 'string') return checked;
    engine = checked;
  }
  let pdfOptions: PdfOptions | undefined;
  if (pdf && !isNull(body, pdf)) {
    const checked = checkPdf(body, pdf);
    if ('ok' in checked) return checked;
    pdfOptions = checked;
  }
  let checkedAssets: AssetEntry[] = [];
  if (assets && !isNull(body, assets)) {
    if (assets.kind !== 'object') return message('Field "assets" must be a JSON object mapping file names to base64 contents');
    const outcome = assets.table!.finish(options.maxImagePixels);
    if (!Array.isArray(outcome)) return { ok: false, error: outcome };
    checkedAssets = outcome;
  }
  const layout: BodyLayout = { data: data.value, template: template.value, assets: checkedAssets };
  if (engine) layout.typst = engine;
  if (pdfOptions && Object.keys(pdfOptions).length > 0) layout.pdf = pdfOptions;
  return { ok: true, layout };
}

/**
 * The offset of the first byte that breaks UTF-8 (only called once the body
 * is known to be invalid): the start of the first sequence that is not a
 * well-formed character (RFC 3629: no overlong forms, no surrogates, at
 * most U+10FFFF), or is cut short by the end.
 */
function firstInvalidUtf8(body: Uint8Array, start: number): number {
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
