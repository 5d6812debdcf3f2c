/**
 * A PDF object read as values, and values written back (ISO 32000-1, 7.3):
 * numbers, booleans, null, names, strings, arrays, dictionaries and
 * references. The e-invoice and the attachments' names change a few objects
 * this way (a catalog, a file specification, a name tree, the XMP stream's
 * dictionary); the signature copies what it keeps as bytes instead
 * (signature-update.ts). The tokens are pdf-syntax.ts's.
 *
 * Every read is linear in what it reads, and nesting is bounded, so a
 * hostile file costs no more than its size.
 */
import { hexValue } from '../bytes/hex.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';
import {
  bytesAre,
  isRegular,
  isWhite,
  literalStringEnd,
  PdfSyntaxError,
  referenceAt,
  referenceEnd,
  skipSpace,
  tokenEnd,
} from './pdf-syntax.js';

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

/** Arrays and dictionaries nested deeper than this are refused (a PDF writer never comes close). */
const MAX_DEPTH = 64;

/**
 * Reads the value that starts at `at` (after white space); returns it and
 * the offset after it. Every string's decoded bytes are also pushed onto
 * `strings` (they may be request content: a title, a file name), which the
 * caller wipes once done (PdfObjects.wipe).
 */
export function readValue(pdf: Uint8Array, at: number, strings: Buffer[], depth = 0): { value: PdfValue; end: number } {
  if (depth > MAX_DEPTH) throw new PdfSyntaxError('objects nested too deeply');
  const start = skipSpace(pdf, at);
  const b = pdf[start];
  if (b === undefined) throw new PdfSyntaxError('unexpected end of file');
  if (b === 0x2f) return readName(pdf, start);
  if (b === 0x28) return readLiteralString(pdf, start, strings);
  if (b === 0x3c && pdf[start + 1] === 0x3c) return readDict(pdf, start, strings, depth);
  if (b === 0x3c) return readHexString(pdf, start, strings);
  if (b === 0x5b) {
    const items: PdfValue[] = [];
    let i = skipSpace(pdf, start + 1);
    while (pdf[i] !== 0x5d) {
      if (i >= pdf.length) throw new PdfSyntaxError('unterminated array');
      const item = readValue(pdf, i, strings, depth + 1);
      items.push(item.value);
      i = skipSpace(pdf, item.end);
    }
    return { value: items, end: i + 1 };
  }
  const end = tokenEnd(pdf, start);
  if (end === start) throw new PdfSyntaxError('unexpected delimiter');
  // `num gen R` is a reference; otherwise a number.
  const refEnd = referenceEnd(pdf, start, end);
  const ref = refEnd > end ? referenceAt(pdf, { start, end: refEnd }) : undefined;
  if (ref) return { value: new PdfRef(ref.num, ref.gen), end: refEnd };
  const span = { start, end };
  if (bytesAre(pdf, span, 'true')) return { value: true, end };
  if (bytesAre(pdf, span, 'false')) return { value: false, end };
  if (bytesAre(pdf, span, 'null')) return { value: null, end };
  const token = latin1(pdf, start, end);
  const value = Number(token);
  if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(token) || !Number.isFinite(value)) throw new PdfSyntaxError('malformed number or keyword');
  return { value, end };
}

/** Bytes [start, end) of `pdf` as latin1 text. */
const latin1 = (pdf: Uint8Array, start: number, end: number) =>
  Buffer.from(pdf.buffer, pdf.byteOffset + start, end - start).toString('latin1');

function readName(pdf: Uint8Array, start: number): { value: PdfName; end: number } {
  let end = start + 1;
  while (isRegular(pdf[end]) && pdf[end] !== 0x23) end++;
  // Most names have no `#xx` escape: their bytes are the name.
  if (!isRegular(pdf[end])) return { value: new PdfName(latin1(pdf, start + 1, end)), end };
  const bytes: number[] = [];
  let i = start + 1;
  while (isRegular(pdf[i])) {
    const b = pdf[i]!;
    if (b === 0x23) {
      const hi = hexValue(pdf[i + 1]);
      const lo = hexValue(pdf[i + 2]);
      if (hi < 0 || lo < 0) throw new PdfSyntaxError('malformed # escape in a name');
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

function readLiteralString(pdf: Uint8Array, start: number, strings: Buffer[]): { value: PdfString; end: number } {
  const end = literalStringEnd(pdf, start);
  // The decoded string is never longer than the written one. A buffer of its own, outside V8's heap (see ownedBuffer):
  // a short title read with Buffer.alloc was found there after the answer, left behind by subarray().
  const out = ownedBuffer(end - start);
  strings.push(out);
  let n = 0;
  let depth = 1;
  let i = start + 1;
  for (;;) {
    const b = pdf[i++]!;
    if (b === 0x5c) {
      const e = pdf[i++]!;
      const simple = SIMPLE_ESCAPES[e];
      if (simple !== undefined) out[n++] = simple;
      else if (e >= 0x30 && e <= 0x37) {
        let code = e - 0x30;
        for (let k = 0; k < 2 && i < end - 1 && pdf[i]! >= 0x30 && pdf[i]! <= 0x37; k++) code = code * 8 + (pdf[i++]! - 0x30);
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

function readHexString(pdf: Uint8Array, start: number, strings: Buffer[]): { value: PdfString; end: number } {
  const close = pdf.indexOf(0x3e, start + 1);
  if (close < 0) throw new PdfSyntaxError('unterminated hex string');
  // Decoded straight into a buffer of its own (a growing array would leave copies behind in the heap).
  const value = ownedBuffer(Math.ceil((close - start - 1) / 2));
  strings.push(value);
  let n = 0;
  let high = -1;
  for (let i = start + 1; i < close; i++) {
    const b = pdf[i]!;
    if (isWhite(b)) continue;
    const v = hexValue(b);
    if (v < 0) throw new PdfSyntaxError('malformed hex string');
    if (high < 0) high = v;
    else {
      value[n++] = high * 16 + v;
      high = -1;
    }
  }
  if (high >= 0) value[n++] = high * 16;
  return { value: new PdfString(value.subarray(0, n)), end: close + 1 };
}

function readDict(pdf: Uint8Array, start: number, strings: Buffer[], depth: number): { value: PdfDict; end: number } {
  const dict: PdfDict = new Map();
  let i = skipSpace(pdf, start + 2);
  while (!(pdf[i] === 0x3e && pdf[i + 1] === 0x3e)) {
    if (i >= pdf.length) throw new PdfSyntaxError('unterminated dictionary');
    if (pdf[i] !== 0x2f) throw new PdfSyntaxError('dictionary key is not a name');
    const key = readName(pdf, i);
    const value = readValue(pdf, key.end, strings, depth + 1);
    dict.set(key.value.name, value.value);
    i = skipSpace(pdf, value.end);
  }
  return { value: dict, end: i + 2 };
}

/** Writes a value in PDF syntax: strings as hex (no escaping to get wrong), names with `#xx` where needed. */
export function writeValue(value: PdfValue): Buffer {
  const out = new ValueWriter();
  out.value(value);
  return out.written();
}

const HEX_DIGITS = Buffer.from('0123456789abcdef');

/**
 * The bytes of one value, written into one buffer of its own that grows
 * (the one it outgrows is wiped): strings written are request content (a
 * title, a file name), so no other copy of them is made, and a value costs
 * one buffer rather than one per token.
 */
class ValueWriter {
  private bytes = ownedBuffer(256);
  private length = 0;

  /** The value written: the caller wipes it. */
  written(): Buffer {
    return this.bytes.subarray(0, this.length);
  }

  value(value: PdfValue): void {
    if (value === null || typeof value === 'boolean') this.ascii(String(value));
    else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new RangeError('a PDF number must be finite');
      this.ascii(Number.isInteger(value) ? String(value) : value.toFixed(6).replace(/0+$/, '').replace(/\.$/, ''));
    } else if (value instanceof PdfName) this.name(value.name);
    else if (value instanceof PdfString) this.hexString(value.bytes);
    else if (value instanceof PdfRef) this.ascii(`${value.num} ${value.gen} R`);
    else if (Array.isArray(value)) {
      this.ascii('[');
      value.forEach((item, i) => {
        if (i > 0) this.ascii(' ');
        this.value(item);
      });
      this.ascii(']');
    } else {
      this.ascii('<<');
      for (const [key, item] of value) {
        this.name(key);
        this.ascii(' ');
        this.value(item);
        this.ascii('\n');
      }
      this.ascii('>>');
    }
  }

  /** Text of the writer's own (syntax, numbers, references): one byte a character. */
  private ascii(text: string): void {
    this.room(text.length);
    this.length += this.bytes.write(text, this.length, 'latin1');
  }

  /** `/name`, each byte that is not a regular character (or is `#`) as `#xx`. */
  private name(name: string): void {
    this.room(1 + 3 * name.length);
    const out = this.bytes;
    out[this.length++] = 0x2f;
    for (let i = 0; i < name.length; i++) {
      const byte = name.charCodeAt(i) & 0xff;
      if (byte > 0x20 && byte < 0x7f && byte !== 0x23 && isRegular(byte)) out[this.length++] = byte;
      else {
        out[this.length++] = 0x23;
        out[this.length++] = HEX_DIGITS[byte >> 4]!;
        out[this.length++] = HEX_DIGITS[byte & 0x0f]!;
      }
    }
  }

  /** `<hex>` of a string's bytes, written byte by byte: a JavaScript string of them could not be wiped. */
  private hexString(bytes: Uint8Array): void {
    this.room(2 * bytes.length + 2);
    const out = this.bytes;
    out[this.length++] = 0x3c;
    for (let i = 0; i < bytes.length; i++) {
      out[this.length++] = HEX_DIGITS[bytes[i]! >> 4]!;
      out[this.length++] = HEX_DIGITS[bytes[i]! & 0x0f]!;
    }
    out[this.length++] = 0x3e;
  }

  /** Makes room for `n` more bytes: a buffer twice as large (or more), the old one copied and wiped. */
  private room(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const grown = ownedBuffer(Math.max(2 * this.bytes.length, this.length + n));
    grown.set(this.bytes.subarray(0, this.length), 0);
    wipe(this.bytes);
    this.bytes = grown;
  }
}

export const name = (text: string) => new PdfName(text);

/** A dictionary's entry if it is a dictionary, else undefined. */
export const asDict = (value: PdfValue | undefined): PdfDict | undefined => (value instanceof Map ? value : undefined);
