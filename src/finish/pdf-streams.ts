/**
 * A stream's data decoded (ISO 32000-1, 7.4): unfiltered, or FlateDecode
 * (what Typst and the writers of cross-reference and object streams use),
 * with or without a PNG predictor. Any other filter is a PdfSyntaxError.
 */
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';
import { inflateSync } from 'node:zlib';
import { arrayItems, bytesAre, dictionaryAt, type Entry, entryOf, integerOf, PdfSyntaxError, type Span } from './pdf-syntax.js';

/**
 * The data `raw` of the stream whose dictionary's `entries` are spans of
 * `bytes`, decoded into a buffer of its own (the caller wipes it). With
 * `maxBytes`, data that inflates past it is a PdfSyntaxError.
 */
export function decodeStream(bytes: Uint8Array, entries: Entry[], raw: Uint8Array, maxBytes?: number): Buffer {
  const filter = entryOf(bytes, entries, '/Filter');
  let data: Buffer;
  if (filter === undefined) data = Buffer.from(raw);
  else if (bytesAre(bytes, filter, '/FlateDecode') || isOneFilter(bytes, filter)) {
    try {
      data = inflateSync(raw, maxBytes === undefined ? {} : { maxOutputLength: maxBytes });
    } catch {
      throw new PdfSyntaxError('a stream that does not inflate');
    }
  } else throw new PdfSyntaxError('unsupported stream filter');
  const parms = entryOf(bytes, entries, '/DecodeParms');
  if (parms && bytes[parms.start] === 0x3c) data = unpredict(data, bytes, dictionaryAt(bytes, parms.start).entries);
  return data;
}

/** Whether the stream's data is FlateDecode alone, with no /DecodeParms. */
export function isPlainFlate(bytes: Uint8Array, entries: Entry[]): boolean {
  const filter = entryOf(bytes, entries, '/Filter');
  if (filter === undefined || entryOf(bytes, entries, '/DecodeParms') !== undefined) return false;
  return bytesAre(bytes, filter, '/FlateDecode') || isOneFilter(bytes, filter);
}

const isOneFilter = (bytes: Uint8Array, filter: Span) => {
  if (bytes[filter.start] !== 0x5b) return false;
  const items = arrayItems(bytes, filter.start);
  return items.length === 1 && bytesAre(bytes, items[0]!, '/FlateDecode');
};

/** Undoes a PNG predictor (`/Predictor` 10 to 15, ISO 32000-1, 7.4.4.4): rows of `/Columns` bytes, each led by its filter type. */
function unpredict(data: Buffer, bytes: Uint8Array, parms: Entry[]): Buffer {
  const predictor = entryOf(bytes, parms, '/Predictor') ? integerOf(bytes, parms, '/Predictor') : 1;
  if (predictor === 1) return data;
  if (predictor < 10) throw new PdfSyntaxError('unsupported predictor');
  const columns = entryOf(bytes, parms, '/Columns') ? integerOf(bytes, parms, '/Columns') : 1;
  const rows = Math.floor(data.length / (columns + 1));
  const out = ownedBuffer(rows * columns);
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
