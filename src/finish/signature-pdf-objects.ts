/**
 * Finds a PDF's objects as its newest cross-reference sections place them:
 * classic `xref` tables and cross-reference streams (PDF 1.5), followed
 * back by `/Prev` through every incremental update, and objects kept inside
 * object streams. What the signature needs of a finished PDF: its trailer
 * (`/Root`, `/Info`, `/ID`, `/Size`), its catalog, its first page, and the
 * kind of its last section (an update continues in the same kind).
 */
import { inflateSync } from 'node:zlib';
import {
  arrayItems,
  bytesAre,
  dictionaryAt,
  type Entry,
  entryOf,
  integerAt,
  PdfSyntaxError,
  type Ref,
  referenceAt,
  skipSpace,
  type Span,
  valueEnd,
} from './signature-pdf-syntax.js';
import { wipe } from '../retention/wipe.js';

/** Where an object is: at an offset of the file, or the `index`-th object of an object stream. */
type Location = { offset: number; gen: number } | { stream: number; index: number };

/** An object's value: bytes of the file, or of a decoded object stream, and where in them. */
export interface ObjectValue {
  bytes: Uint8Array;
  span: Span;
}

/** How far back `startxref` may be from the end: the trailer's end, where writers put it. */
const TAIL_BYTES = 1024;

/** The least an object or cross-reference stream may inflate to (see streamAt). */
const MIN_INFLATE_BYTES = 16 * 1024 * 1024;

/** More cross-reference sections than this in one file means a `/Prev` loop or a hostile file. */
const MAX_SECTIONS = 10_000;

export class PdfObjects {
  private readonly locations = new Map<number, Location>();
  /** The newest trailer's entries (for a cross-reference stream: its dictionary's). */
  readonly trailer: Entry[];
  /** Offset of the newest cross-reference section: the update's `/Prev`. */
  readonly lastSection: number;
  /** Whether the newest section is a cross-reference stream (the update then writes one too). */
  readonly lastIsStream: boolean;
  /** One more than the highest object number in use. */
  readonly size: number;
  /** Decoded object streams, wiped by `wipe()`: they hold the PDF's content. */
  private readonly decoded = new Map<number, { bytes: Buffer; offsets: number[] }>();

  constructor(private readonly pdf: Uint8Array) {
    this.lastSection = lastStartXref(pdf);
    let trailer: Entry[] | undefined;
    let lastIsStream = false;
    let size = 0;
    const seen = new Set<number>();
    for (let at: number | undefined = this.lastSection; at !== undefined; ) {
      if (seen.has(at) || seen.size >= MAX_SECTIONS) throw new PdfSyntaxError('cross-reference sections loop');
      seen.add(at);
      const section = this.readSection(at);
      if (!trailer) {
        trailer = section.trailer;
        lastIsStream = section.isStream;
      }
      size = Math.max(size, integerOf(pdf, section.trailer, '/Size'));
      const prev = entryOf(pdf, section.trailer, '/Prev');
      at = prev === undefined ? undefined : integerAt(pdf, prev);
      if (at !== undefined && (at < 0 || at >= pdf.length)) throw new PdfSyntaxError('bad /Prev');
    }
    this.trailer = trailer!;
    this.lastIsStream = lastIsStream;
    this.size = size;
  }

  /** The value of object `ref`, as the newest section places it. */
  value(ref: Ref): ObjectValue {
    const location = this.locations.get(ref.num);
    if (!location) throw new PdfSyntaxError('reference to a missing object');
    if ('offset' in location) return { bytes: this.pdf, span: objectBody(this.pdf, location.offset) };
    const stream = this.objectStream(location.stream);
    const start = stream.offsets[location.index];
    if (start === undefined) throw new PdfSyntaxError('object stream index out of range');
    const at = skipSpace(stream.bytes, start);
    return { bytes: stream.bytes, span: { start: at, end: valueEnd(stream.bytes, at) } };
  }

  /** The generation an updated copy of object `num` keeps. */
  generation(num: number): number {
    const location = this.locations.get(num);
    return location && 'gen' in location ? location.gen : 0;
  }

  /** The value `span` of `bytes` resolved: the object it refers to, or itself. */
  resolve(bytes: Uint8Array, span: Span): ObjectValue {
    const ref = referenceAt(bytes, span);
    return ref ? this.value(ref) : { bytes, span };
  }

  /** Zero-fills the decoded object streams. */
  wipe(): void {
    for (const { bytes } of this.decoded.values()) wipe(bytes);
    this.decoded.clear();
  }

  private readSection(at: number): { trailer: Entry[]; isStream: boolean } {
    const pdf = this.pdf;
    const start = skipSpace(pdf, at);
    if (bytesAre(pdf, { start, end: start + 4 }, 'xref')) return { trailer: this.readTable(start + 4), isStream: false };
    const { dictionary, data } = streamAt(pdf, at);
    const dict = dictionaryAt(dictionary.bytes, dictionary.span.start).entries;
    this.readStreamEntries(pdf, dict, data);
    return { trailer: dict, isStream: true };
  }

  /** A classic table: subsections of `first count` and 20-byte rows, then `trailer` and its dictionary. */
  private readTable(at: number): Entry[] {
    const pdf = this.pdf;
    let i = skipSpace(pdf, at);
    while (!bytesAre(pdf, { start: i, end: i + 7 }, 'trailer')) {
      const first = readInteger(pdf, i);
      const count = readInteger(pdf, first.end);
      i = skipSpace(pdf, count.end);
      for (let n = 0; n < count.value; n++) {
        const offset = readInteger(pdf, i);
        const gen = readInteger(pdf, offset.end);
        const kind = skipSpace(pdf, gen.end);
        if (pdf[kind] === 0x6e && !this.locations.has(first.value + n)) {
          this.locations.set(first.value + n, { offset: offset.value, gen: gen.value });
        } else if (pdf[kind] !== 0x6e && pdf[kind] !== 0x66) throw new PdfSyntaxError('bad cross-reference row');
        i = skipSpace(pdf, kind + 1);
      }
    }
    return dictionaryAt(pdf, skipSpace(pdf, i + 7)).entries;
  }

  /** A cross-reference stream's rows (ISO 32000-1, 7.5.8): `/W` field widths over `/Index` ranges. */
  private readStreamEntries(pdf: Uint8Array, dict: Entry[], data: Buffer): void {
    const widths = integersOf(pdf, dict, '/W');
    if (widths.length !== 3 || widths.some((w) => w > 8)) throw new PdfSyntaxError('bad /W');
    const index = entryOf(pdf, dict, '/Index') ? integersOf(pdf, dict, '/Index') : [0, integerOf(pdf, dict, '/Size')];
    const rowBytes = widths[0]! + widths[1]! + widths[2]!;
    // Every row takes bytes of the stream, so a huge /Index ends at the stream's end.
    if (rowBytes === 0) throw new PdfSyntaxError('bad /W');
    let row = 0;
    try {
      for (let r = 0; r + 1 < index.length; r += 2) {
        for (let n = 0; n < index[r + 1]!; n++, row++) {
          if ((row + 1) * rowBytes > data.length) throw new PdfSyntaxError('cross-reference stream too short');
          const fields = [0, 0, 0];
          let at = row * rowBytes;
          for (let f = 0; f < 3; f++) for (let b = 0; b < widths[f]!; b++) fields[f] = fields[f]! * 256 + data[at++]!;
          const type = widths[0] === 0 ? 1 : fields[0];
          const num = index[r]! + n;
          if (this.locations.has(num)) continue;
          if (type === 1) this.locations.set(num, { offset: fields[1]!, gen: fields[2]! });
          else if (type === 2) this.locations.set(num, { stream: fields[1]!, index: fields[2]! });
        }
      }
    } finally {
      wipe(data);
    }
  }

  /** Object stream `num`, decoded once: its bytes, and where each of its objects starts. */
  private objectStream(num: number): { bytes: Buffer; offsets: number[] } {
    const cached = this.decoded.get(num);
    if (cached) return cached;
    const location = this.locations.get(num);
    if (!location || !('offset' in location)) throw new PdfSyntaxError('object stream not found');
    const { dictionary, data } = streamAt(this.pdf, location.offset);
    const dict = dictionaryAt(dictionary.bytes, dictionary.span.start).entries;
    const count = integerOf(this.pdf, dict, '/N');
    const first = integerOf(this.pdf, dict, '/First');
    const offsets: number[] = [];
    let i = 0;
    for (let n = 0; n < count; n++) {
      const objectNumber = readInteger(data, i);
      const offset = readInteger(data, objectNumber.end);
      offsets.push(first + offset.value);
      i = offset.end;
    }
    const stream = { bytes: data, offsets };
    this.decoded.set(num, stream);
    return stream;
  }
}

/** The offset `startxref` names, from the file's last bytes. */
function lastStartXref(pdf: Uint8Array): number {
  const tail = Buffer.from(pdf.buffer, pdf.byteOffset, pdf.length).subarray(Math.max(0, pdf.length - TAIL_BYTES));
  const at = tail.lastIndexOf('startxref');
  if (at < 0) throw new PdfSyntaxError('no startxref');
  const offset = readInteger(tail, at + 9).value;
  if (offset >= pdf.length) throw new PdfSyntaxError('startxref beyond the file');
  return offset;
}

/** The value of the indirect object whose `N G obj` is at `offset`. */
function objectBody(pdf: Uint8Array, offset: number): Span {
  const num = readInteger(pdf, offset);
  const gen = readInteger(pdf, num.end);
  const keyword = skipSpace(pdf, gen.end);
  if (!bytesAre(pdf, { start: keyword, end: keyword + 3 }, 'obj')) throw new PdfSyntaxError('expected obj');
  const start = skipSpace(pdf, keyword + 3);
  return { start, end: valueEnd(pdf, start) };
}

/** The stream object at `offset`: its dictionary and its data, decoded (an owned buffer: the caller wipes it). */
function streamAt(pdf: Uint8Array, offset: number): { dictionary: ObjectValue; data: Buffer } {
  const span = objectBody(pdf, offset);
  const dict = dictionaryAt(pdf, span.start).entries;
  let i = skipSpace(pdf, span.end);
  if (!bytesAre(pdf, { start: i, end: i + 6 }, 'stream')) throw new PdfSyntaxError('expected stream');
  i += 6;
  if (pdf[i] === 0x0d) i++;
  if (pdf[i] === 0x0a) i++;
  // A cross-reference or object stream's /Length is direct in every writer we know; an indirect one is refused.
  const length = integerOf(pdf, dict, '/Length');
  if (i + length > pdf.length) throw new PdfSyntaxError('stream beyond the file');
  const raw = pdf.subarray(i, i + length);
  const filter = entryOf(pdf, dict, '/Filter');
  let data: Buffer;
  if (filter === undefined) data = Buffer.from(raw);
  else if (bytesAre(pdf, filter, '/FlateDecode') || isOneFilter(pdf, filter)) {
    // A cross-reference or object stream is a few bytes per object: no honest one inflates past this.
    try {
      data = inflateSync(raw, { maxOutputLength: Math.max(MIN_INFLATE_BYTES, 4 * pdf.length) });
    } catch {
      throw new PdfSyntaxError('a stream that does not inflate');
    }
  } else throw new PdfSyntaxError('unsupported stream filter');
  const parms = entryOf(pdf, dict, '/DecodeParms');
  if (parms && pdf[parms.start] === 0x3c) data = unpredict(data, pdf, dictionaryAt(pdf, parms.start).entries);
  return { dictionary: { bytes: pdf, span }, data };
}

const isOneFilter = (pdf: Uint8Array, filter: Span) => {
  if (pdf[filter.start] !== 0x5b) return false;
  const items = arrayItems(pdf, filter.start);
  return items.length === 1 && bytesAre(pdf, items[0]!, '/FlateDecode');
};

/** Undoes a PNG predictor (`/Predictor` 10 to 15, ISO 32000-1, 7.4.4.4): rows of `/Columns` bytes, each led by its filter type. */
function unpredict(data: Buffer, pdf: Uint8Array, parms: Entry[]): Buffer {
  const predictor = entryOf(pdf, parms, '/Predictor') ? integerOf(pdf, parms, '/Predictor') : 1;
  if (predictor === 1) return data;
  if (predictor < 10) throw new PdfSyntaxError('unsupported predictor');
  const columns = entryOf(pdf, parms, '/Columns') ? integerOf(pdf, parms, '/Columns') : 1;
  const rows = Math.floor(data.length / (columns + 1));
  const out = Buffer.alloc(rows * columns);
  for (let r = 0; r < rows; r++) {
    const type = data[r * (columns + 1)];
    for (let c = 0; c < columns; c++) {
      const x = data[r * (columns + 1) + 1 + c]!;
      const left = c > 0 ? out[r * columns + c - 1]! : 0;
      const up = r > 0 ? out[(r - 1) * columns + c]! : 0;
      const upLeft = r > 0 && c > 0 ? out[(r - 1) * columns + c - 1]! : 0;
      let predicted = 0;
      if (type === 1) predicted = left;
      else if (type === 2) predicted = up;
      else if (type === 3) predicted = (left + up) >> 1;
      else if (type === 4) predicted = paeth(left, up, upLeft);
      out[r * columns + c] = (x + predicted) & 0xff;
    }
  }
  wipe(data);
  return out;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

function readInteger(bytes: Uint8Array, at: number): { value: number; end: number } {
  const start = skipSpace(bytes, at);
  let end = start;
  while (bytes[end] !== undefined && bytes[end]! >= 0x30 && bytes[end]! <= 0x39) end++;
  const value = integerAt(bytes, { start, end });
  if (value < 0) throw new PdfSyntaxError('expected an integer');
  return { value, end };
}

function integerOf(pdf: Uint8Array, dict: Entry[], key: string): number {
  const span = entryOf(pdf, dict, key);
  const value = span === undefined ? -1 : integerAt(pdf, span);
  if (value < 0) throw new PdfSyntaxError(`expected an integer ${key}`);
  return value;
}

function integersOf(pdf: Uint8Array, dict: Entry[], key: string): number[] {
  const span = entryOf(pdf, dict, key);
  if (span === undefined || pdf[span.start] !== 0x5b) throw new PdfSyntaxError(`expected an array ${key}`);
  return arrayItems(pdf, span.start).map((item) => {
    const value = integerAt(pdf, item);
    if (value < 0) throw new PdfSyntaxError(`expected integers in ${key}`);
    return value;
  });
}
