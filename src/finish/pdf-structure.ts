/**
 * Reads a finished PDF's structure: where its last cross-reference section
 * is, the trailer (root, info, ID, size), where each object is, and an
 * object's value and stream bytes. It follows `/Prev` through the sections
 * of earlier incremental updates, newest first, so it reads a PDF that a
 * finishing step has already updated (the e-invoice update, then a
 * signature's) as well as Typst's own.
 *
 * Only classic cross-reference tables are read (what Typst 0.14 writes,
 * and what incremental-update.ts appends); a cross-reference stream is a
 * PdfSyntaxError. Each section is read once, so the work is linear in the
 * file's size, however its `/Prev` chain loops.
 */
import { inflateSync } from 'node:zlib';
import { asDict, type PdfDict, PdfName, PdfRef, PdfSyntaxError, type PdfValue, readToken, readValue, skipSpace } from './pdf-syntax.js';

export interface PdfStructure {
  /** The newest trailer dictionary. */
  trailer: PdfDict;
  /** The offset of the newest cross-reference section (an update's `/Prev`). */
  startxref: number;
  /** Where each object in use is, by object number (the newest section that names it wins). */
  offsets: Map<number, number>;
  /** One more than the largest object number (`/Size`). */
  size: number;
}

/** The last `startxref` in the file's final kilobyte, and the offset it names. */
function lastStartxref(pdf: Uint8Array): number {
  const tail = Buffer.from(pdf.buffer, pdf.byteOffset, pdf.length).subarray(Math.max(0, pdf.length - 1024));
  const at = tail.lastIndexOf('startxref');
  if (at < 0) throw new PdfSyntaxError('no startxref', pdf.length);
  const start = pdf.length - tail.length + at + 'startxref'.length;
  const { token } = readToken(pdf, skipSpace(pdf, start));
  if (!/^\d{1,10}$/.test(token)) throw new PdfSyntaxError('startxref is not an offset', start);
  return Number(token);
}

/** Reads one classic cross-reference section at `at`: its entries (in use) and its trailer. */
function readSection(pdf: Uint8Array, at: number, offsets: Map<number, number>): PdfDict {
  let i = skipSpace(pdf, at);
  const keyword = readToken(pdf, i);
  if (keyword.token !== 'xref') throw new PdfSyntaxError('not a cross-reference table (cross-reference streams are not read)', i);
  i = keyword.end;
  for (;;) {
    i = skipSpace(pdf, i);
    const first = readToken(pdf, i);
    if (first.token === 'trailer') {
      const trailer = asDict(readValue(pdf, first.end).value);
      if (!trailer) throw new PdfSyntaxError('trailer is not a dictionary', first.end);
      return trailer;
    }
    const count = readToken(pdf, skipSpace(pdf, first.end));
    if (!/^\d{1,10}$/.test(first.token) || !/^\d{1,10}$/.test(count.token)) throw new PdfSyntaxError('malformed subsection header', i);
    const start = Number(first.token);
    const entries = Number(count.token);
    i = count.end;
    for (let k = 0; k < entries; k++) {
      i = skipSpace(pdf, i);
      const offset = readToken(pdf, i);
      const generation = readToken(pdf, skipSpace(pdf, offset.end));
      const kind = readToken(pdf, skipSpace(pdf, generation.end));
      if (!/^\d{10}$/.test(offset.token) || !/^\d{5}$/.test(generation.token) || (kind.token !== 'n' && kind.token !== 'f')) {
        throw new PdfSyntaxError('malformed cross-reference entry', i);
      }
      // Newest first: an entry an update already gave is kept.
      if (!offsets.has(start + k)) offsets.set(start + k, kind.token === 'n' ? Number(offset.token) : -1);
      i = kind.end;
    }
  }
}

export function readStructure(pdf: Uint8Array): PdfStructure {
  const startxref = lastStartxref(pdf);
  const offsets = new Map<number, number>();
  const seen = new Set<number>();
  let trailer: PdfDict | undefined;
  let at: number | undefined = startxref;
  while (at !== undefined && !seen.has(at)) {
    if (at >= pdf.length) throw new PdfSyntaxError('cross-reference offset past the end', at);
    seen.add(at);
    const section = readSection(pdf, at, offsets);
    trailer ??= section;
    const prev = section.get('Prev');
    at = typeof prev === 'number' && Number.isInteger(prev) && prev >= 0 ? prev : undefined;
  }
  for (const [num, offset] of offsets) if (offset < 0) offsets.delete(num);
  const size = trailer!.get('Size');
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1) throw new PdfSyntaxError('trailer without /Size', startxref);
  return { trailer: trailer!, startxref, offsets, size };
}

/** An indirect object: its value and, for a stream, its raw (still encoded) bytes. */
export interface PdfObject {
  value: PdfValue;
  stream?: Buffer;
}

/** Reads object `num` (`num gen obj ... endobj`), its stream's bytes as a view into `pdf`. */
export function readObject(pdf: Buffer, structure: PdfStructure, num: number): PdfObject | undefined {
  const offset = structure.offsets.get(num);
  if (offset === undefined || offset >= pdf.length) return undefined;
  const head = readToken(pdf, skipSpace(pdf, offset));
  const gen = readToken(pdf, skipSpace(pdf, head.end));
  const obj = readToken(pdf, skipSpace(pdf, gen.end));
  if (head.token !== String(num) || obj.token !== 'obj')
    throw new PdfSyntaxError(`object ${num} is not where the cross-reference table says`, offset);
  const { value, end } = readValue(pdf, obj.end);
  const after = skipSpace(pdf, end);
  const keyword = readToken(pdf, after);
  if (keyword.token !== 'stream' || !(value instanceof Map)) return { value };
  // The data starts after the end of line that follows `stream` (CRLF or LF).
  let start = keyword.end;
  if (pdf[start] === 0x0d) start++;
  if (pdf[start] === 0x0a) start++;
  const length = resolve(pdf, structure, value.get('Length'));
  if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || start + length > pdf.length) {
    throw new PdfSyntaxError(`object ${num} has no usable stream /Length`, start);
  }
  return { value, stream: pdf.subarray(start, start + length) };
}

/** A value, with a reference followed (once: the object it names must not be another bare reference). */
export function resolve(pdf: Buffer, structure: PdfStructure, value: PdfValue | undefined): PdfValue | undefined {
  if (!(value instanceof PdfRef)) return value;
  const target = readObject(pdf, structure, value.num)?.value;
  return target instanceof PdfRef ? undefined : target;
}

/** A stream's decoded bytes: unfiltered or FlateDecode (what Typst writes); other filters are refused. */
export function decodeStream(object: PdfObject): Buffer {
  const dict = asDict(object.value);
  if (!dict || !object.stream) throw new PdfSyntaxError('not a stream', 0);
  const filter = dict.get('Filter');
  const filters = filter === undefined ? [] : Array.isArray(filter) ? filter : [filter];
  if (filters.length === 0) return Buffer.from(object.stream);
  if (filters.length === 1 && filters[0] instanceof PdfName && filters[0].name === 'FlateDecode' && dict.get('DecodeParms') === undefined) {
    return inflateSync(object.stream);
  }
  throw new PdfSyntaxError('a stream filter other than FlateDecode', 0);
}
