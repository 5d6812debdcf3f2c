/**
 * The one reader of a finished PDF's structure, for every finishing step
 * (the attachments' names, the e-invoice, the signature): its objects as
 * its newest cross-reference sections place them, classic `xref` tables
 * and cross-reference streams (PDF 1.5) alike, followed back by `/Prev`
 * through every incremental update (Typst's file, then an e-invoice's
 * update, then a signature's), objects kept inside object streams, and the
 * trailer, catalog and first page. An object is handed out as a span of
 * bytes (pdf-syntax.ts), or read into values (pdf-values.ts).
 *
 * Each section is read once and each object stream decoded once, so the
 * work is linear in the file's size. What it decodes (object streams, the
 * strings read into values) may be request content: `wipe()` zero-fills it,
 * and the one who made the reader calls it when the step is done.
 */
import { wipe } from '../retention/wipe.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { decodeStream, isPlainFlate } from './pdf-streams.js';
import {
  arrayItems,
  bytesAre,
  dictionaryAt,
  type Entry,
  entryOf,
  integerAt,
  integerOf,
  integersOf,
  PdfSyntaxError,
  type Ref,
  readInteger,
  referenceAt,
  skipSpace,
  type Span,
  valueEnd,
} from './pdf-syntax.js';
import { type PdfValue, PdfRef, readValue } from './pdf-values.js';

/** Where an object is: at an offset of the file, the `index`-th object of an object stream, or free (null). */
type Location = { offset: number; gen: number } | { stream: number; index: number } | null;

/** An object's value: bytes of the file, or of a decoded object stream, and where in them. */
export interface ObjectValue {
  bytes: Uint8Array;
  span: Span;
}

/** A stream object: its dictionary's entries (spans of the file) and its data as written (a view into the file). */
interface StreamObject {
  entries: Entry[];
  raw: Uint8Array;
}

/** How far back `startxref` may be from the end: the trailer's end, where writers put it. */
const TAIL_BYTES = 1024;

/** The least the cross-reference and object streams of a file may inflate to, all together (see decodeStructure). */
const MIN_INFLATE_BYTES = 16 * 1024 * 1024;

/** More cross-reference sections than this in one file means a `/Prev` loop or a hostile file. */
const MAX_SECTIONS = 10_000;

/** The pages tree is walked down its first kids at most this deep. */
const MAX_PAGE_TREE_DEPTH = 64;

export class PdfObjects {
  private readonly locations = new Map<number, Location>();
  /** The newest trailer's entries (for a cross-reference stream: its dictionary's). */
  readonly trailer: Entry[];
  /** Offset of the newest cross-reference section: the update's `/Prev`. */
  readonly lastSection: number;
  /** Whether the newest section is a cross-reference stream (an update then writes one too). */
  readonly lastIsStream: boolean;
  /** One more than the highest object number in use. */
  readonly size: number;
  /** Decoded object streams, wiped by `wipe()`: they hold the PDF's content. */
  private readonly decoded = new Map<number, { bytes: Buffer; offsets: number[] }>();
  /** Every string read into a value (a title, a file name), wiped by `wipe()`. */
  private readonly strings: Buffer[] = [];
  /** What the cross-reference and object streams may still inflate to. */
  private inflateBudget: number;

  constructor(readonly pdf: Uint8Array) {
    // They are a few bytes per object: no honest file's inflate past this.
    this.inflateBudget = Math.max(MIN_INFLATE_BYTES, 4 * pdf.length);
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

  /** Whether object `num` is in use. */
  has(num: number): boolean {
    return Boolean(this.locations.get(num));
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

  /** The generation an updated copy of object `num` keeps (0 for a new one). */
  generation(num: number): number {
    const location = this.locations.get(num);
    return location && 'gen' in location ? location.gen : 0;
  }

  /** The value `span` of `bytes` resolved: the object it refers to, or itself. */
  resolve(bytes: Uint8Array, span: Span): ObjectValue {
    const ref = referenceAt(bytes, span);
    return ref ? this.value(ref) : { bytes, span };
  }

  /** A value read into values; its strings are wiped by `wipe()`. */
  read(value: ObjectValue): PdfValue {
    return readValue(value.bytes, value.span.start, this.strings).value;
  }

  /**
   * A value with a reference followed once: undefined for a missing object
   * (which PDF reads as null) or one that is itself a bare reference.
   */
  follow(value: PdfValue | undefined): PdfValue | undefined {
    if (!(value instanceof PdfRef)) return value;
    if (!this.has(value.num)) return undefined;
    const target = this.read(this.value(value));
    return target instanceof PdfRef ? undefined : target;
  }

  /** The trailer's `/Root`: the catalog's reference. */
  root(): Ref {
    return refOf(this.pdf, entryOf(this.pdf, this.trailer, '/Root'));
  }

  /** The catalog's entries, as spans of the bytes it is in. */
  catalog(): { bytes: Uint8Array; entries: Entry[] } {
    const root = this.value(this.root());
    return { bytes: root.bytes, entries: dictionaryAt(root.bytes, root.span.start).entries };
  }

  /** The first page of the document: down the pages tree by first kids. */
  firstPage(): Ref {
    const catalog = this.catalog();
    let node = refOf(catalog.bytes, entryOf(catalog.bytes, catalog.entries, '/Pages'));
    for (let depth = 0; depth < MAX_PAGE_TREE_DEPTH; depth++) {
      const value = this.value(node);
      const { entries } = dictionaryAt(value.bytes, value.span.start);
      const kids = entryOf(value.bytes, entries, '/Kids');
      if (!kids) return node;
      const array = this.resolve(value.bytes, kids);
      const first = arrayItems(array.bytes, array.span.start)[0];
      if (!first) throw new PdfSyntaxError('a pages node without kids');
      node = refOf(array.bytes, first);
    }
    throw new PdfSyntaxError('pages tree too deep');
  }

  /** Stream object `ref`'s data, decoded into a buffer of its own (the caller wipes it). */
  streamData(ref: Ref): Buffer {
    const { entries, raw } = this.stream(ref);
    return decodeStream(this.pdf, entries, raw);
  }

  private stream(ref: Ref): StreamObject {
    const location = this.locations.get(ref.num);
    // A stream is never inside an object stream.
    if (!location || !('offset' in location)) throw new PdfSyntaxError('stream object not found');
    return streamAt(this.pdf, location.offset, (span) => {
      const length = this.resolve(this.pdf, span);
      return integerAt(length.bytes, length.span);
    });
  }

  /**
   * Stream object `ref`'s data as written, copied into a buffer of its own
   * (the caller wipes it), if it is FlateDecode with no parameters: what a
   * new stream with `/Filter /FlateDecode` can carry as it is, without
   * compressing the data again.
   */
  flateData(ref: Ref): Buffer | undefined {
    const { entries, raw } = this.stream(ref);
    if (!isPlainFlate(this.pdf, entries)) return undefined;
    const copy = ownedBuffer(raw.length);
    copy.set(raw);
    return copy;
  }

  /** Zero-fills the decoded object streams and every string read into a value. */
  wipe(): void {
    for (const { bytes } of this.decoded.values()) wipe(bytes);
    this.decoded.clear();
    for (const bytes of this.strings) wipe(bytes);
    this.strings.length = 0;
  }

  private readSection(at: number): { trailer: Entry[]; isStream: boolean } {
    const pdf = this.pdf;
    const start = skipSpace(pdf, at);
    if (bytesAre(pdf, { start, end: start + 4 }, 'xref')) return { trailer: this.readTable(start + 4), isStream: false };
    const { entries, data } = this.decodeStructure(at);
    this.readStreamEntries(pdf, entries, data);
    return { trailer: entries, isStream: true };
  }

  /** Records where object `num` is, unless a newer section (read before) placed it. */
  private place(num: number, location: Location): void {
    if (!this.locations.has(num)) this.locations.set(num, location);
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
        if (pdf[kind] === 0x6e) this.place(first.value + n, { offset: offset.value, gen: gen.value });
        else if (pdf[kind] === 0x66) this.place(first.value + n, null);
        else throw new PdfSyntaxError('bad cross-reference row');
        i = skipSpace(pdf, kind + 1);
      }
    }
    return dictionaryAt(pdf, skipSpace(pdf, i + 7)).entries;
  }

  /** A cross-reference stream's rows (ISO 32000-1, 7.5.8): `/W` field widths over `/Index` ranges. */
  private readStreamEntries(pdf: Uint8Array, dict: Entry[], data: Buffer): void {
    try {
      const widths = integersOf(pdf, dict, '/W');
      if (widths.length !== 3 || widths.some((w) => w > 8)) throw new PdfSyntaxError('bad /W');
      const index = entryOf(pdf, dict, '/Index') ? integersOf(pdf, dict, '/Index') : [0, integerOf(pdf, dict, '/Size')];
      const rowBytes = widths[0]! + widths[1]! + widths[2]!;
      // Every row takes bytes of the stream, so a huge /Index ends at the stream's end.
      if (rowBytes === 0) throw new PdfSyntaxError('bad /W');
      let row = 0;
      for (let r = 0; r + 1 < index.length; r += 2) {
        for (let n = 0; n < index[r + 1]!; n++, row++) {
          if ((row + 1) * rowBytes > data.length) throw new PdfSyntaxError('cross-reference stream too short');
          const fields = [0, 0, 0];
          let at = row * rowBytes;
          for (let f = 0; f < 3; f++) for (let b = 0; b < widths[f]!; b++) fields[f] = fields[f]! * 256 + data[at++]!;
          const type = widths[0] === 0 ? 1 : fields[0];
          const num = index[r]! + n;
          if (type === 0) this.place(num, null);
          else if (type === 1) this.place(num, { offset: fields[1]!, gen: fields[2]! });
          else if (type === 2) this.place(num, { stream: fields[1]!, index: fields[2]! });
        }
      }
    } finally {
      wipe(data);
    }
  }

  /**
   * A cross-reference or object stream at `offset`, decoded (an owned
   * buffer: the caller wipes it) within what is left of the budget. Its
   * /Length is direct in every writer we know; an indirect one is refused
   * (the objects are not placed yet).
   */
  private decodeStructure(offset: number): { entries: Entry[]; data: Buffer } {
    const { entries, raw } = streamAt(this.pdf, offset, (span) => integerAt(this.pdf, span));
    if (this.inflateBudget <= 0) throw new PdfSyntaxError('cross-reference and object streams too large');
    const data = decodeStream(this.pdf, entries, raw, this.inflateBudget);
    this.inflateBudget -= data.length;
    return { entries, data };
  }

  /** Object stream `num`, decoded once: its bytes, and where each of its objects starts. */
  private objectStream(num: number): { bytes: Buffer; offsets: number[] } {
    const cached = this.decoded.get(num);
    if (cached) return cached;
    const location = this.locations.get(num);
    if (!location || !('offset' in location)) throw new PdfSyntaxError('object stream not found');
    const { entries: dict, data } = this.decodeStructure(location.offset);
    const stream = { bytes: data, offsets: [] as number[] };
    // Kept before its index is read, so that `wipe()` reaches it even when the index is damaged.
    this.decoded.set(num, stream);
    const count = integerOf(this.pdf, dict, '/N');
    const first = integerOf(this.pdf, dict, '/First');
    let i = 0;
    for (let n = 0; n < count; n++) {
      const objectNumber = readInteger(data, i);
      const offset = readInteger(data, objectNumber.end);
      stream.offsets.push(first + offset.value);
      i = offset.end;
    }
    return stream;
  }
}

function refOf(bytes: Uint8Array, span: Span | undefined): Ref {
  const ref = span && referenceAt(bytes, span);
  if (!ref) throw new PdfSyntaxError('expected a reference');
  return ref;
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

/**
 * The stream object at `offset`: its dictionary and its data as written.
 * `length` reads `/Length` (-1 when it is not an integer).
 */
function streamAt(pdf: Uint8Array, offset: number, length: (span: Span) => number): StreamObject {
  const span = objectBody(pdf, offset);
  const entries = dictionaryAt(pdf, span.start).entries;
  let i = skipSpace(pdf, span.end);
  if (!bytesAre(pdf, { start: i, end: i + 6 }, 'stream')) throw new PdfSyntaxError('expected stream');
  i += 6;
  // The data starts after the end of line that follows `stream` (CRLF or LF).
  if (pdf[i] === 0x0d) i++;
  if (pdf[i] === 0x0a) i++;
  const lengthSpan = entryOf(pdf, entries, '/Length');
  const bytes = lengthSpan ? length(lengthSpan) : -1;
  if (bytes < 0) throw new PdfSyntaxError('expected an integer /Length');
  if (i + bytes > pdf.length) throw new PdfSyntaxError('stream beyond the file');
  return { entries, raw: pdf.subarray(i, i + bytes) };
}
