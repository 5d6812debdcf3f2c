/**
 * The one writer of an incremental update (ISO 32000-1, 7.5.6), for every
 * finishing step: new objects and new versions of existing ones appended
 * after the PDF, a cross-reference section for them of the same kind as
 * the file's last one (a table, or a stream for a file whose last section
 * is a stream), and a trailer that points back to that section. Every byte
 * before it stays as it was, so Typst's objects, its document ID, what a
 * PDF/A validator checked and an earlier update (the e-invoice's, before a
 * signature's) keep their place, and a later step appends its own update
 * after this one in the same way.
 */
import { wipe } from '../retention/wipe.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import type { PdfObjects } from './pdf-objects.js';
import { entryOf } from './pdf-syntax.js';
import { type PdfDict, type PdfValue, writeValue } from './pdf-values.js';

/** One object to write: its number and its value's bytes, in parts; for a stream, its (encoded) data. */
export interface NewObject {
  num: number;
  /** The value (for a stream: its dictionary, `/Length` included), written one part after another. */
  value: Buffer[];
  stream?: Buffer;
}

/** A value written as an object; a stream's dictionary gets its `/Length` from `stream`. */
export function valueObject(num: number, value: PdfValue, stream?: Buffer): NewObject {
  if (!stream) return { num, value: [writeValue(value)] };
  const dict: PdfDict = new Map(value as PdfDict);
  dict.set('Length', stream.length);
  return { num, value: [writeValue(dict)], stream };
}

export interface AppendedUpdate {
  /** The PDF followed by the update: a new, owned buffer (the caller wipes it, and the PDF it was given). */
  pdf: Buffer;
  /** Where each object's value starts in `pdf`, by object number. */
  valueAt: Map<number, number>;
}

/** Keys a new trailer copies from the newest one, besides `/Size` and `/Prev`. */
const TRAILER_KEYS = ['/Root', '/Info', '/ID', '/Encrypt'];

export const ascii = (text: string) => Buffer.from(text, 'latin1');

/**
 * Appends `updated` to the PDF `objects` read. An object numbered from
 * `objects.size` on is new; `/Size` grows to cover it. The parts given are
 * zero-filled once copied (they held copies of the PDF's objects, or the
 * caller's texts): the result is the only copy.
 */
export function appendUpdate(objects: PdfObjects, updated: NewObject[]): AppendedUpdate {
  const finished = objects.pdf;
  const parts: Buffer[] = [];
  let length = finished.length;
  const push = (part: Buffer) => {
    parts.push(part);
    length += part.length;
  };
  // The previous file may end right after `%%EOF`: the update starts on a line of its own.
  if (finished[finished.length - 1] !== 0x0a && finished[finished.length - 1] !== 0x0d) push(ascii('\n'));
  const offsets = new Map<number, { offset: number; gen: number }>();
  const valueAt = new Map<number, number>();
  for (const object of updated) {
    const gen = objects.generation(object.num);
    offsets.set(object.num, { offset: length, gen });
    push(ascii(`${object.num} ${gen} obj\n`));
    valueAt.set(object.num, length);
    for (const part of object.value) push(part);
    if (object.stream) {
      push(ascii('\nstream\n'));
      push(object.stream);
      push(ascii('\nendstream'));
    }
    push(ascii('\nendobj\n'));
  }
  let size = objects.size;
  for (const o of updated) size = Math.max(size, o.num + 1);
  const trailerEntries = (size: number) => {
    const kept: Buffer[] = [ascii(`/Size ${size} /Prev ${objects.lastSection}`)];
    for (const key of TRAILER_KEYS) {
      const value = entryOf(finished, objects.trailer, key);
      if (value) kept.push(ascii(` ${key} `), Buffer.from(finished.subarray(value.start, value.end)));
    }
    return kept;
  };
  const sectionAt = length;
  if (objects.lastIsStream) {
    // The cross-reference stream is an object too: the next number, in its own rows.
    offsets.set(size, { offset: sectionAt, gen: 0 });
    const { index, rows } = streamRows(offsets);
    push(ascii(`${size} 0 obj\n<</Type /XRef /W [1 4 2] /Index [${index.join(' ')}] /Length ${rows.length} `));
    for (const part of trailerEntries(size + 1)) push(part);
    push(ascii('>>\nstream\n'));
    push(rows);
    push(ascii('\nendstream\nendobj\n'));
  } else {
    push(ascii(`xref\n${tableRows(offsets)}trailer\n<<`));
    for (const part of trailerEntries(size)) push(part);
    push(ascii('>>\n'));
  }
  push(ascii(`startxref\n${sectionAt}\n%%EOF\n`));
  const pdf = ownedBuffer(length);
  pdf.set(finished, 0);
  let at = finished.length;
  for (const part of parts) {
    pdf.set(part, at);
    at += part.length;
  }
  // The copies of the objects (the catalog, the XMP, the XML, the caller's texts) are in `pdf` now.
  for (const part of parts) wipe(part);
  return { pdf, valueAt };
}

/** Runs of consecutive object numbers, ascending. */
function runs(offsets: Map<number, unknown>): number[][] {
  const nums = [...offsets.keys()].sort((a, b) => a - b);
  const out: number[][] = [];
  for (const num of nums) {
    const last = out[out.length - 1];
    if (last && last[last.length - 1] === num - 1) last.push(num);
    else out.push([num]);
  }
  return out;
}

/** A classic table's subsections: `first count`, then 20-byte rows. */
function tableRows(offsets: Map<number, { offset: number; gen: number }>): string {
  let text = '';
  for (const run of runs(offsets)) {
    text += `${run[0]} ${run.length}\n`;
    for (const num of run) {
      const { offset, gen } = offsets.get(num)!;
      text += `${String(offset).padStart(10, '0')} ${String(gen).padStart(5, '0')} n\r\n`;
    }
  }
  return text;
}

/** A cross-reference stream's `/Index` and rows (type 1, a 4-byte offset, a 2-byte generation). */
function streamRows(offsets: Map<number, { offset: number; gen: number }>): { index: number[]; rows: Buffer } {
  const index: number[] = [];
  const rows = Buffer.alloc(offsets.size * 7);
  let at = 0;
  for (const run of runs(offsets)) {
    index.push(run[0]!, run.length);
    for (const num of run) {
      const { offset, gen } = offsets.get(num)!;
      at = rows.writeUInt8(1, at);
      at = rows.writeUInt32BE(offset, at);
      at = rows.writeUInt16BE(gen, at);
    }
  }
  return { index, rows };
}
