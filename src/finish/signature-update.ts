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
 *     on the first page; hidden too in a PDF/UA document that is not PDF/A
 *     (PDF/UA-1 7.18.4 wants a widget that is neither hidden nor outside
 *     the page tagged as a Form, and PDF/A forbids hiding it);
 *   - the first page again, its /Annots ending with the widget, and in a
 *     tagged document its /Tabs /S (PDF/UA-1 7.18.3: every page with an
 *     annotation);
 *   - the catalog again with /AcroForm (/Fields ending with the field,
 *     /SigFlags 3), or the /AcroForm object again if it is one of its own;
 *   - the update's cross-reference section and trailer (incremental-update.ts).
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
import { appendUpdate, ascii, type NewObject } from './incremental-update.js';
import { PdfObjects } from './pdf-objects.js';
import { arrayItems, dictionaryAt, type Entry, entryOf, PdfSyntaxError, type Ref, referenceAt, type Span } from './pdf-syntax.js';
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
/** /F's Hidden flag (2). */
const HIDDEN = 2;

const refText = (ref: Ref) => `${ref.num} ${ref.gen} R`;

/** The PDF date of `time` in UTC: `D:YYYYMMDDHHmmSSZ`. */
function pdfDate(time: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `D:${time.getUTCFullYear()}${two(time.getUTCMonth() + 1)}${two(time.getUTCDate())}${two(time.getUTCHours())}${two(time.getUTCMinutes())}${two(time.getUTCSeconds())}Z`;
}

/*
 * The copies below hold the PDF's own bytes (a link's address, an
 * attachment's name: request content), and short ones land in Node's
 * shared pool, which no one wipes. So entries are written from views of
 * the PDF, not copies of them, and what a copy is made of is wiped once
 * copied: `extra`, whose parts are this module's own (the writer,
 * incremental-update.ts, wipes the values it is given).
 */

/** A dictionary written again: its entries as they were but those named in `drop`, then `extra` (bytes, wiped once copied). */
function dictionaryWith(bytes: Uint8Array, entries: Entry[], drop: string[], extra: Buffer[]): Buffer {
  const parts: Uint8Array[] = [ascii('<<')];
  for (const { key, value } of entries) {
    if (drop.some((name) => entryOf(bytes, [{ key, value }], name))) continue;
    parts.push(bytes.subarray(key.start, key.end), ascii(' '), bytes.subarray(value.start, value.end), ascii('\n'));
  }
  parts.push(...extra, ascii('>>'));
  const dictionary = Buffer.concat(parts);
  wipe(...extra);
  return dictionary;
}

/** An array of the items of the array (direct, or the object a reference names) at `span`, then `ref`; no array: just `ref`. */
function arrayWith(objects: PdfObjects, bytes: Uint8Array, span: Span | undefined, ref: Ref): Buffer {
  const parts: Uint8Array[] = [ascii('[')];
  if (span) {
    const array = objects.resolve(bytes, span);
    if (array.bytes[array.span.start] !== 0x5b) throw new PdfSyntaxError('expected an array');
    for (const item of arrayItems(array.bytes, array.span.start)) parts.push(array.bytes.subarray(item.start, item.end), ascii(' '));
  }
  parts.push(ascii(`${refText(ref)}]`));
  return Buffer.concat(parts);
}

/**
 * Appends the signature's objects to `finished`, with a placeholder of
 * `contentsBytes` bytes (zeros, as hex) for the CMS, signed at `time`.
 * Throws PdfSyntaxError when the file cannot be read as a PDF.
 */
export function appendSignatureUpdate(finished: Buffer, texts: SignatureTexts, contentsBytes: number, time: Date): Update {
  const objects = new PdfObjects(finished);
  try {
    return build(objects, texts, contentsBytes, time);
  } finally {
    objects.wipe();
  }
}

function build(objects: PdfObjects, texts: SignatureTexts, contentsBytes: number, time: Date): Update {
  const rootRef = objects.root();
  const catalog = objects.catalog();
  const pageRef = objects.firstPage();
  const fieldRef = { num: objects.size, gen: 0 };
  const sigRef = { num: objects.size + 1, gen: 0 };
  const updated: NewObject[] = [];

  // The first page, its annotations ending with the widget; in a tagged document, in the structure's tab order.
  const page = objects.value(pageRef);
  const pageEntries = dictionaryAt(page.bytes, page.span.start).entries;
  const annots = arrayWith(objects, page.bytes, entryOf(page.bytes, pageEntries, '/Annots'), fieldRef);
  const tagged = entryOf(catalog.bytes, catalog.entries, '/StructTreeRoot') !== undefined;
  const pageExtra = [ascii('/Annots '), annots, ascii('\n')];
  if (tagged) pageExtra.push(ascii('/Tabs /S\n'));
  updated.push({
    num: pageRef.num,
    value: [dictionaryWith(page.bytes, pageEntries, tagged ? ['/Annots', '/Tabs'] : ['/Annots'], pageExtra)],
  });

  // The interactive form: in the catalog, or an object of its own.
  const acroForm = entryOf(catalog.bytes, catalog.entries, '/AcroForm');
  const acroFormRef = acroForm && referenceAt(catalog.bytes, acroForm);
  const form = acroForm ? objects.resolve(catalog.bytes, acroForm) : undefined;
  const formEntries = form ? dictionaryAt(form.bytes, form.span.start).entries : [];
  const fields = arrayWith(objects, form?.bytes ?? objects.pdf, form && entryOf(form.bytes, formEntries, '/Fields'), fieldRef);
  const formDict = dictionaryWith(
    form?.bytes ?? objects.pdf,
    formEntries,
    ['/Fields', '/SigFlags'],
    [ascii('/Fields '), fields, ascii('\n/SigFlags 3\n')],
  );
  if (acroFormRef) updated.push({ num: acroFormRef.num, value: [formDict] });
  else {
    const catalogDict = dictionaryWith(catalog.bytes, catalog.entries, ['/AcroForm'], [ascii('/AcroForm '), formDict, ascii('\n')]);
    updated.push({ num: rootRef.num, value: [catalogDict] });
  }

  const flags = tagged && declaresUaNotA(objects, catalog) ? WIDGET_FLAGS | HIDDEN : WIDGET_FLAGS;
  updated.push({
    num: fieldRef.num,
    value: [
      ascii(
        `<</Type /Annot /Subtype /Widget /FT /Sig /T (Signature${sigRef.num}) /V ${refText(sigRef)} /F ${flags} /Rect [0 0 0 0] /P ${refText(pageRef)}>>`,
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
  // The `<` of the placeholder ends the head (the writer wipes the parts, not their lengths).
  const headBytes = sigHead.reduce((n, part) => n + part.length, 0);
  updated.push({ num: sigRef.num, value: [...sigHead, zeros, ascii('>>>')] });

  const { pdf, valueAt } = appendUpdate(objects, updated);
  const contentsAt = valueAt.get(sigRef.num)! + headBytes - 1;
  return {
    pdf,
    contents: { at: contentsAt, hexDigits: zeros.length },
    byteRange: byteRangeBefore(contentsAt),
  };
}

/**
 * Whether the document's XMP declares PDF/UA (`pdfuaid:part`) and no PDF/A
 * (`pdfaid:part`). The packet holds the document's title, request content:
 * it is read as bytes and wiped.
 */
function declaresUaNotA(objects: PdfObjects, catalog: { bytes: Uint8Array; entries: Entry[] }): boolean {
  const entry = entryOf(catalog.bytes, catalog.entries, '/Metadata');
  const ref = entry && referenceAt(catalog.bytes, entry);
  if (!ref) return false;
  const packet = objects.streamData(ref);
  try {
    return packet.includes('pdfuaid:part') && !packet.includes('pdfaid:part');
  } finally {
    wipe(packet);
  }
}

/** Where the /ByteRange placeholder's blanks are, given where the /Contents placeholder's `<` is. */
function byteRangeBefore(contentsAt: number): Span {
  const end = contentsAt + 1 - CONTENTS_KEY.length;
  return { start: end - BYTE_RANGE_BLANKS, end };
}
