/**
 * PDF's object syntax (ISO 32000-1, 7.3): reading one object from a byte
 * offset, and writing objects back. Enough for what the service changes in
 * a finished PDF (a catalog, a file specification, a name tree, the XMP
 * stream): numbers, booleans, null, names, strings, arrays, dictionaries
 * and references. Streams are read by pdf-structure.ts around this.
 *
 * Hand-written because the npm PDF libraries (pdf-lib and the like) load
 * and rewrite a whole document, where an incremental update must leave
 * every byte Typst wrote as it is. Every read is linear in what it reads,
 * and nesting is bounded, so a hostile file costs no more than its size.
 */
import { wipe } from '../retention/wipe.js';

export class PdfName {
  /** The name's bytes after `#xx` decoding, as latin1. */
  constructor(readonly name: string) {}
}

export class PdfString {
  /** The string's bytes, escapes decoded. */
  constructor(readonly bytes: Buffer) {}
}

export class PdfRef {
  constructor(
    readonly num: number,
    readonly gen: number,
  ) {}
}

export type PdfDict = Map<string, PdfValue>;
export type PdfValue = number | boolean | null | PdfName | PdfString | PdfRef | PdfValue[] | PdfDict;

export class PdfSyntaxError extends Error {
  override name = 'PdfSyntaxError';
  constructor(what: string, at: number) {
    super(`${what} at byte ${at}`);
  }
}

/** Arrays and dictionaries nested deeper than this are refused (a PDF writer never comes close). */
const MAX_DEPTH = 64;

const isWhite = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;
const isDelimiter = (b: number | undefined) =>
  b === 0x28 || b === 0x29 || b === 0x3c || b === 0x3e || b === 0x5b || b === 0x5d || b === 0x7b || b === 0x7d || b === 0x2f || b === 0x25;
const isRegular = (b: number | undefined) => b !== undefined && !isWhite(b) && !isDelimiter(b);
const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;

function hexValue(b: number | undefined): number {
  if (b === undefined) return -1;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/** Skips white space and comments from `at`; returns the first other byte's offset. */
export function skipSpace(pdf: Uint8Array, at: number): number {
  while (at < pdf.length) {
    const b = pdf[at];
    if (isWhite(b)) at++;
    else if (b === 0x25) {
      while (at < pdf.length && pdf[at] !== 0x0a && pdf[at] !== 0x0d) at++;
    } else break;
  }
  return at;
}

/** The regular characters from `at` (a keyword or a number), and where they end. */
export function readToken(pdf: Uint8Array, at: number): { token: string; end: number } {
  let end = at;
  while (end < pdf.length && isRegular(pdf[end])) end++;
  return { token: Buffer.from(pdf.buffer, pdf.byteOffset + at, end - at).toString('latin1'), end };
}

/** An unsigned integer at `at` (after white space), or undefined. */
function readUnsigned(pdf: Uint8Array, at: number): { value: number; end: number } | undefined {
  const start = skipSpace(pdf, at);
  let end = start;
  let value = 0;
  while (isDigit(pdf[end]) && end - start < 10) value = value * 10 + (pdf[end++]! - 0x30);
  if (end === start || isRegular(pdf[end])) return undefined;
  return { value, end };
}

/**
 * Every string's bytes read from a PDF (they may be request content: a
 * title, a file name), to be wiped by `wipeStrings` once the step is done.
 */
const read: Buffer[] = [];

/** Zero-fills every string read since the last call. */
export function wipeStrings(): void {
  for (const bytes of read) wipe(bytes);
  read.length = 0;
}

/** Reads the object that starts at `at` (after white space); returns it and the offset after it. */
export function readValue(pdf: Uint8Array, at: number, depth = 0): { value: PdfValue; end: number } {
  if (depth > MAX_DEPTH) throw new PdfSyntaxError('objects nested too deeply', at);
  const start = skipSpace(pdf, at);
  const b = pdf[start];
  if (b === undefined) throw new PdfSyntaxError('unexpected end of file', start);
  if (b === 0x2f) return readName(pdf, start);
  if (b === 0x28) return readLiteralString(pdf, start);
  if (b === 0x3c && pdf[start + 1] === 0x3c) return readDict(pdf, start, depth);
  if (b === 0x3c) return readHexString(pdf, start);
  if (b === 0x5b) {
    const items: PdfValue[] = [];
    let i = skipSpace(pdf, start + 1);
    while (pdf[i] !== 0x5d) {
      if (i >= pdf.length) throw new PdfSyntaxError('unterminated array', start);
      const item = readValue(pdf, i, depth + 1);
      items.push(item.value);
      i = skipSpace(pdf, item.end);
    }
    return { value: items, end: i + 1 };
  }
  if (isDigit(b) || b === 0x2b || b === 0x2d || b === 0x2e) {
    // `num gen R` is a reference; otherwise a number.
    const first = readUnsigned(pdf, start);
    if (first) {
      const second = readUnsigned(pdf, first.end);
      if (second) {
        const r = skipSpace(pdf, second.end);
        if (pdf[r] === 0x52 && !isRegular(pdf[r + 1])) return { value: new PdfRef(first.value, second.value), end: r + 1 };
      }
    }
    const { token, end } = readToken(pdf, start);
    const value = Number(token);
    if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(token) || !Number.isFinite(value)) throw new PdfSyntaxError('malformed number', start);
    return { value, end };
  }
  const { token, end } = readToken(pdf, start);
  if (token === 'true') return { value: true, end };
  if (token === 'false') return { value: false, end };
  if (token === 'null') return { value: null, end };
  throw new PdfSyntaxError('unexpected token', start);
}

function readName(pdf: Uint8Array, start: number): { value: PdfName; end: number } {
  const bytes: number[] = [];
  let i = start + 1;
  while (i < pdf.length && isRegular(pdf[i])) {
    const b = pdf[i]!;
    if (b === 0x23) {
      const hi = hexValue(pdf[i + 1]);
      const lo = hexValue(pdf[i + 2]);
      if (hi < 0 || lo < 0) throw new PdfSyntaxError('malformed # escape in a name', i);
      bytes.push(hi * 16 + lo);
      i += 3;
    } else {
      bytes.push(b);
      i++;
    }
  }
  return { value: new PdfName(Buffer.from(bytes).toString('latin1')), end: i };
}

/** `\n`, `\r`, `\t`, `\b`, `\f`, `\(`, `\)`, `\\` in a literal string. */
const SIMPLE_ESCAPES: Record<number, number> = { 110: 0x0a, 114: 0x0d, 116: 0x09, 98: 0x08, 102: 0x0c, 40: 0x28, 41: 0x29, 92: 0x5c };

/** Where the literal string at `start` ends (after its closing parenthesis). */
function literalStringEnd(pdf: Uint8Array, start: number): number {
  let depth = 1;
  let i = start + 1;
  while (depth > 0) {
    if (i >= pdf.length) throw new PdfSyntaxError('unterminated string', start);
    const b = pdf[i++];
    if (b === 0x5c) i++;
    else if (b === 0x28) depth++;
    else if (b === 0x29) depth--;
  }
  return i;
}

function readLiteralString(pdf: Uint8Array, start: number): { value: PdfString; end: number } {
  // Sized by a first pass: the decoded string is never longer than the written one.
  const out = Buffer.alloc(literalStringEnd(pdf, start) - start);
  read.push(out);
  let n = 0;
  let depth = 1;
  let i = start + 1;
  for (;;) {
    if (i >= pdf.length) throw new PdfSyntaxError('unterminated string', start);
    const b = pdf[i++]!;
    if (b === 0x5c) {
      const e = pdf[i++];
      if (e === undefined) throw new PdfSyntaxError('unterminated string', start);
      const simple = SIMPLE_ESCAPES[e];
      if (simple !== undefined) out[n++] = simple;
      else if (e >= 0x30 && e <= 0x37) {
        let code = e - 0x30;
        for (let k = 0; k < 2 && pdf[i] !== undefined && pdf[i]! >= 0x30 && pdf[i]! <= 0x37; k++) code = code * 8 + (pdf[i++]! - 0x30);
        out[n++] = code & 0xff;
      } else if (e === 0x0d) {
        if (pdf[i] === 0x0a) i++;
      } else if (e !== 0x0a) out[n++] = e;
    } else if (b === 0x28) {
      depth++;
      out[n++] = b;
    } else if (b === 0x29) {
      if (--depth === 0) break;
      out[n++] = b;
    } else out[n++] = b;
  }
  return { value: new PdfString(out.subarray(0, n)), end: i };
}

function readHexString(pdf: Uint8Array, start: number): { value: PdfString; end: number } {
  const bytes: number[] = [];
  let high = -1;
  let i = start + 1;
  for (;;) {
    if (i >= pdf.length) throw new PdfSyntaxError('unterminated hex string', start);
    const b = pdf[i++]!;
    if (b === 0x3e) break;
    if (isWhite(b)) continue;
    const v = hexValue(b);
    if (v < 0) throw new PdfSyntaxError('malformed hex string', i - 1);
    if (high < 0) high = v;
    else {
      bytes.push(high * 16 + v);
      high = -1;
    }
  }
  if (high >= 0) bytes.push(high * 16);
  const value = Buffer.from(bytes);
  wipe(bytes);
  read.push(value);
  return { value: new PdfString(value), end: i };
}

function readDict(pdf: Uint8Array, start: number, depth: number): { value: PdfDict; end: number } {
  const dict: PdfDict = new Map();
  let i = skipSpace(pdf, start + 2);
  while (!(pdf[i] === 0x3e && pdf[i + 1] === 0x3e)) {
    if (i >= pdf.length) throw new PdfSyntaxError('unterminated dictionary', start);
    if (pdf[i] !== 0x2f) throw new PdfSyntaxError('dictionary key is not a name', i);
    const key = readName(pdf, i);
    const value = readValue(pdf, key.end, depth + 1);
    dict.set(key.value.name, value.value);
    i = skipSpace(pdf, value.end);
  }
  return { value: dict, end: i + 2 };
}

/** Writes a value in PDF syntax: strings as hex (no escaping to get wrong), names with `#xx` where needed. */
export function writeValue(value: PdfValue): Buffer {
  const parts: Buffer[] = [];
  write(value, parts);
  return Buffer.concat(parts);
}

function nameBytes(name: string): string {
  let out = '/';
  for (const byte of Buffer.from(name, 'latin1')) {
    out +=
      byte > 0x20 && byte < 0x7f && byte !== 0x23 && isRegular(byte) ? String.fromCharCode(byte) : `#${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

function write(value: PdfValue, parts: Buffer[]): void {
  if (value === null) parts.push(Buffer.from('null'));
  else if (typeof value === 'boolean') parts.push(Buffer.from(String(value)));
  else if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('a PDF number must be finite');
    parts.push(Buffer.from(Number.isInteger(value) ? String(value) : value.toFixed(6).replace(/0+$/, '').replace(/\.$/, '')));
  } else if (value instanceof PdfName) parts.push(Buffer.from(nameBytes(value.name), 'latin1'));
  else if (value instanceof PdfString) parts.push(Buffer.from(`<${value.bytes.toString('hex')}>`));
  else if (value instanceof PdfRef) parts.push(Buffer.from(`${value.num} ${value.gen} R`));
  else if (Array.isArray(value)) {
    parts.push(Buffer.from('['));
    value.forEach((item, i) => {
      if (i > 0) parts.push(Buffer.from(' '));
      write(item, parts);
    });
    parts.push(Buffer.from(']'));
  } else {
    parts.push(Buffer.from('<<'));
    for (const [key, item] of value) {
      parts.push(Buffer.from(nameBytes(key), 'latin1'), Buffer.from(' '));
      write(item, parts);
      parts.push(Buffer.from('\n'));
    }
    parts.push(Buffer.from('>>'));
  }
}

export const name = (text: string) => new PdfName(text);

/** A dictionary's entry if it is a dictionary, else undefined. */
export const asDict = (value: PdfValue | undefined): PdfDict | undefined => (value instanceof Map ? value : undefined);
