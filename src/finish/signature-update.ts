/**
 * The signature's incremental update (ISO 32000-1, 7.5.6 and 12.8): new
 * objects appended after the finished PDF, which stays byte for byte as it
 * was, so whatever came before (Typst's file, an e-invoice's update) keeps
 * its place and its own signatures, if any, stay valid. The update holds:
 *
 *   - the signature value: /Type /Sig, /SubFilter /ETSI.CAdES.detached,
 *     /M (the server's time), the request's /Reason, /Location,
 *     /ContactInfo, a /ByteRange and a /Contents placeholder of zeros that
 *     signature-signer.ts fills once the file is whole;
 *   - an invisible signature field that is its own widget (/Rect [0 0 0 0],
 *     printable and locked: PDF/A wants no appearance for a zero-size one)
 *     on the first page;
 *   - the first page again, its /Annots ending with the widget;
 *   - the catalog again with /AcroForm (/Fields ending with the field,
 *     /SigFlags 3), or the /AcroForm object again if it is one of its own;
 *   - a cross-reference section of the same kind as the last one (a table,
 *     or a stream for a file whose last section is a stream), whose /Prev
 *     is that section.
 *
 * Hand-written because no kept library appends one to an existing file:
 * pdf-lib rewrites the whole file (Typst's objects renumbered, an earlier
 * update merged away), and @signpdf/placeholder-plain reads only classic
 * xref tables (it fails on a cross-reference stream), makes strings of the
 * PDF's objects, and brings PDFKit along.
 *
 * The objects copied (the catalog, the first page, their arrays) are copied
 * as bytes, entry by entry; nothing of the PDF becomes a string.
 */
import { PdfObjects } from './signature-pdf-objects.js';
import { arrayItems, dictionaryAt, type Entry, entryOf, PdfSyntaxError, type Ref, referenceAt, type Span } from './signature-pdf-syntax.js';
import { wipe } from '../retention/wipe.js';

/** The texts of the signature dictionary, each already a PDF string (`(...)` or `<FEFF...>`). */
export interface SignatureTexts {
  reason?: Buffer;
  location?: Buffer;
  contact?: Buffer;
}

export interface Update {
  /** The finished PDF followed by the update: a new, owned buffer (the caller wipes it). */
  pdf: Buffer;
  /** Where the `<` of the /Contents placeholder is, and how many hex digits it holds. */
  contents: { at: number; hexDigits: number };
  /** Where the /ByteRange array's fixed-width placeholder is (between its brackets). */
  byteRange: Span;
}

/** Room for the /ByteRange numbers (four of up to 10 digits, files up to 10^10 bytes), blanks until filled in. */
const BYTE_RANGE_BLANKS = 4 * 11;
/** What follows the /ByteRange placeholder, up to the /Contents placeholder's `<`. */
const CONTENTS_KEY = '] /Contents <';
/** /F: Print (4) and Locked (128); a PDF/A annotation must be printable. */
const WIDGET_FLAGS = 132;
/** The pages tree is walked down its first kids at most this deep. */
const MAX_PAGE_TREE_DEPTH = 64;

const ascii = (text: string) => Buffer.from(text, 'latin1');
const refText = (ref: Ref) => `${ref.num} ${ref.gen} R`;

/** The PDF date of `time` in UTC: `D:YYYYMMDDHHmmSSZ`. */
function pdfDate(time: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `D:${time.getUTCFullYear()}${two(time.getUTCMonth() + 1)}${two(time.getUTCDate())}${two(time.getUTCHours())}${two(time.getUTCMinutes())}${two(time.getUTCSeconds())}Z`;
}

/** A dictionary written again: its entries as they were but those named in `drop`, then `extra` (bytes). */
function dictionaryWith(bytes: Uint8Array, entries: Entry[], drop: string[], extra: Buffer[]): Buffer {
  const parts: Buffer[] = [ascii('<<')];
  for (const { key, value } of entries) {
    if (drop.some((name) => entryOf(bytes, [{ key, value }], name))) continue;
    parts.push(
      Buffer.from(bytes.subarray(key.start, key.end)),
      ascii(' '),
      Buffer.from(bytes.subarray(value.start, value.end)),
      ascii('\n'),
    );
  }
  parts.push(...extra, ascii('>>'));
  return Buffer.concat(parts);
}

/** An array of the items of the array (direct, or the object a reference names) at `span`, then `ref`; no array: just `ref`. */
function arrayWith(objects: PdfObjects, bytes: Uint8Array, span: Span | undefined, ref: Ref): Buffer {
  const parts: Buffer[] = [ascii('[')];
  if (span) {
    const array = objects.resolve(bytes, span);
    if (array.bytes[array.span.start] !== 0x5b) throw new PdfSyntaxError('expected an array');
    for (const item of arrayItems(array.bytes, array.span.start))
      parts.push(Buffer.from(array.bytes.subarray(item.start, item.end)), ascii(' '));
  }
  parts.push(ascii(`${refText(ref)}]`));
  return Buffer.concat(parts);
}

/** The first page of the document: down the pages tree by first kids. */
function firstPage(objects: PdfObjects, catalog: { bytes: Uint8Array; entries: Entry[] }): Ref {
  let node = refOf(catalog.bytes, entryOf(catalog.bytes, catalog.entries, '/Pages'));
  for (let depth = 0; depth < MAX_PAGE_TREE_DEPTH; depth++) {
    const value = objects.value(node);
    const { entries } = dictionaryAt(value.bytes, value.span.start);
    const kids = entryOf(value.bytes, entries, '/Kids');
    if (!kids) return node;
    const array = objects.resolve(value.bytes, kids);
    const first = arrayItems(array.bytes, array.span.start)[0];
    if (!first) throw new PdfSyntaxError('a pages node without kids');
    node = refOf(array.bytes, first);
  }
  throw new PdfSyntaxError('pages tree too deep');
}

function refOf(bytes: Uint8Array, span: Span | undefined): Ref {
  const ref = span && referenceAt(bytes, span);
  if (!ref) throw new PdfSyntaxError('expected a reference');
  return ref;
}

/** One new or updated object: its number and generation and its value's bytes. */
interface NewObject {
  ref: Ref;
  value: Buffer[];
}

/**
 * Appends the signature's objects to `finished`, with a placeholder of
 * `contentsBytes` bytes (zeros, as hex) for the CMS, signed at `time`.
 * Throws PdfSyntaxError when the file cannot be read as a PDF.
 */
export function appendSignatureUpdate(finished: Buffer, texts: SignatureTexts, contentsBytes: number, time: Date): Update {
  const objects = new PdfObjects(finished);
  try {
    return build(finished, objects, texts, contentsBytes, time);
  } finally {
    objects.wipe();
  }
}

function build(finished: Buffer, objects: PdfObjects, texts: SignatureTexts, contentsBytes: number, time: Date): Update {
  const trailer = objects.trailer;
  const rootRef = refOf(finished, entryOf(finished, trailer, '/Root'));
  const root = objects.value(rootRef);
  const catalog = { bytes: root.bytes, entries: dictionaryAt(root.bytes, root.span.start).entries };
  const pageRef = firstPage(objects, catalog);
  const fieldRef = { num: objects.size, gen: 0 };
  const sigRef = { num: objects.size + 1, gen: 0 };
  const updated: NewObject[] = [];

  // The first page, its annotations ending with the widget.
  const page = objects.value(pageRef);
  const pageEntries = dictionaryAt(page.bytes, page.span.start).entries;
  const annots = arrayWith(objects, page.bytes, entryOf(page.bytes, pageEntries, '/Annots'), fieldRef);
  updated.push({ ref: pageRef, value: [dictionaryWith(page.bytes, pageEntries, ['/Annots'], [ascii('/Annots '), annots, ascii('\n')])] });

  // The interactive form: in the catalog, or an object of its own.
  const acroForm = entryOf(catalog.bytes, catalog.entries, '/AcroForm');
  const acroFormRef = acroForm && referenceAt(catalog.bytes, acroForm);
  const form = acroForm ? objects.resolve(catalog.bytes, acroForm) : undefined;
  const formEntries = form ? dictionaryAt(form.bytes, form.span.start).entries : [];
  const fields = arrayWith(objects, form?.bytes ?? finished, form && entryOf(form.bytes, formEntries, '/Fields'), fieldRef);
  const formDict = dictionaryWith(
    form?.bytes ?? finished,
    formEntries,
    ['/Fields', '/SigFlags'],
    [ascii('/Fields '), fields, ascii('\n/SigFlags 3\n')],
  );
  if (acroFormRef) updated.push({ ref: acroFormRef, value: [formDict] });
  else {
    const catalogDict = dictionaryWith(catalog.bytes, catalog.entries, ['/AcroForm'], [ascii('/AcroForm '), formDict, ascii('\n')]);
    updated.push({ ref: rootRef, value: [catalogDict] });
  }

  updated.push({
    ref: fieldRef,
    value: [
      ascii(
        `<</Type /Annot /Subtype /Widget /FT /Sig /T (Signature${sigRef.num}) /V ${refText(sigRef)} /F ${WIDGET_FLAGS} /Rect [0 0 0 0] /P ${refText(pageRef)}>>`,
      ),
    ],
  });
  const sigHead: Buffer[] = [ascii(`<</Type /Sig /Filter /Adobe.PPKLite /SubFilter /ETSI.CAdES.detached /M (${pdfDate(time)})`)];
  if (texts.reason) sigHead.push(ascii(' /Reason '), texts.reason);
  if (texts.location) sigHead.push(ascii(' /Location '), texts.location);
  if (texts.contact) sigHead.push(ascii(' /ContactInfo '), texts.contact);
  sigHead.push(ascii(` /ByteRange [${' '.repeat(BYTE_RANGE_BLANKS)}${CONTENTS_KEY}`));
  // /Contents comes last: what the signature covers after it is only the end of this object and the update's tail.
  const zeros = Buffer.alloc(contentsBytes * 2, 0x30);
  updated.push({ ref: sigRef, value: [...sigHead, zeros, ascii('>>>')] });

  // The update: objects, then a cross-reference section of the kind the file's last one is.
  const parts: Buffer[] = [];
  let length = finished.length;
  const push = (part: Buffer) => {
    parts.push(part);
    length += part.length;
  };
  if (finished[finished.length - 1] !== 0x0a && finished[finished.length - 1] !== 0x0d) push(ascii('\n'));
  const offsets = new Map<number, { offset: number; gen: number }>();
  let contentsAt = -1;
  for (const object of updated) {
    const gen = object.ref === fieldRef || object.ref === sigRef ? 0 : objects.generation(object.ref.num);
    offsets.set(object.ref.num, { offset: length, gen });
    push(ascii(`${object.ref.num} ${gen} obj\n`));
    for (const part of object.value) {
      if (part === zeros) contentsAt = length - 1;
      push(part);
    }
    push(ascii('\nendobj\n'));
  }
  const trailerEntries = (size: number) => {
    const kept: Buffer[] = [ascii(`/Size ${size} /Root ${refText(rootRef)} /Prev ${objects.lastSection}`)];
    for (const key of ['/Info', '/ID']) {
      const value = entryOf(finished, trailer, key);
      if (value) kept.push(ascii(` ${key} `), Buffer.from(finished.subarray(value.start, value.end)));
    }
    return kept;
  };
  const sectionAt = length;
  if (objects.lastIsStream) {
    const xrefRef = { num: objects.size + 2, gen: 0 };
    offsets.set(xrefRef.num, { offset: sectionAt, gen: 0 });
    const { index, rows } = streamRows(offsets);
    push(ascii(`${xrefRef.num} 0 obj\n<</Type /XRef /W [1 4 2] /Index [${index.join(' ')}] /Length ${rows.length} `));
    for (const part of trailerEntries(xrefRef.num + 1)) push(part);
    push(ascii('>>\nstream\n'));
    push(rows);
    push(ascii('\nendstream\nendobj\n'));
  } else {
    push(ascii(`xref\n${tableRows(offsets)}trailer\n<<`));
    for (const part of trailerEntries(objects.size + 2)) push(part);
    push(ascii('>>\n'));
  }
  push(ascii(`startxref\n${sectionAt}\n%%EOF\n`));
  const pdf = Buffer.concat([finished, ...parts], length);
  // The copies of the catalog and the first page (and the caller's texts) are in `pdf` now.
  for (const part of parts) wipe(part);
  return {
    pdf,
    contents: { at: contentsAt, hexDigits: zeros.length },
    byteRange: byteRangeBefore(contentsAt),
  };
}

/** Where the /ByteRange placeholder's blanks are, given where the /Contents placeholder's `<` is. */
function byteRangeBefore(contentsAt: number): Span {
  const end = contentsAt + 1 - CONTENTS_KEY.length;
  return { start: end - BYTE_RANGE_BLANKS, end };
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
