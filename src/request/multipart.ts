/**
 * A `multipart/form-data` body (RFC 7578, RFC 2046 section 5.1), read
 * from the buffer the service received it into: where each part's name,
 * file name and content are, as byte ranges of that buffer.
 *
 * Hand-written because no kept parser works this way. busboy (the one
 * Fastify's and most Node servers' multipart plugins build on) is a stream:
 * it hands each part over as chunks it copies or slices as it goes, field
 * values as JavaScript strings, and leaves files to be written to disk or
 * gathered by the caller; its header values and file names are strings too.
 * Here the whole body already lies in an owned buffer (the 10 MB limit
 * holds it), so a part is a range of it: nothing is copied, nothing becomes
 * a string, nothing is written anywhere, and the one buffer is wiped after
 * the answer as a JSON body's is. The tests hold it to busboy's results.
 *
 * The names in Content-Disposition (quoted strings with `\` escapes, or
 * RFC 8187's `filename*=UTF-8''...`) are decoded in place, over their
 * own header bytes, which nothing else reads: a name is then one range of
 * the buffer, whatever its escapes. Every step is linear in the body: each
 * boundary is searched for once, from where the last one ended, and a
 * part's headers are read once and are at most MAX_HEADER_BYTES long.
 */
import { FORM_MESSAGES } from '../messages.js';
import { hexValue } from '../bytes/hex.js';
import type { Range } from '../bytes/layout.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';
import { APOSTROPHE, BACKSLASH, COLON, CR, DASH, EQUALS, LF, PERCENT, QUOTE, SEMICOLON, STAR, TOKEN } from '../bytes/ascii.js';

/** One part: its `name`, its file name if it has one, and its content. */
export interface FormPart {
  name: Range;
  /** `filename*` if given, else `filename`; absent: a plain field. */
  filename?: Range;
  content: Range;
}

export type FormParse = { ok: true; parts: FormPart[] } | { ok: false; message: string };

/** A part's headers, all together, as Node limits a request's (busboy's is a little less: it counts two bytes a line more). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** A part's header lines: busboy reads the first 1,999 alone, and would not see a Content-Disposition after them. */
export const MAX_HEADER_LINES = 1000;

const isBlank = (b: number | undefined) => b === 0x20 || b === 0x09;

const CONTENT_DISPOSITION = Buffer.from('content-disposition');
const FORM_DATA = Buffer.from('form-data');
const NAME = Buffer.from('name');
const FILENAME = Buffer.from('filename');
const FILENAME_STAR = Buffer.from('filename*');
const UTF8 = Buffer.from('utf-8');

/** Whether `bytes[from, to)` equals `lower` with ASCII letters in any case. */
function equalsIgnoringCase(bytes: Uint8Array, from: number, to: number, lower: Uint8Array): boolean {
  if (to - from !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const b = bytes[from + i]!;
    if ((b >= 0x41 && b <= 0x5a ? b | 0x20 : b) !== lower[i]) return false;
  }
  return true;
}

/** RFC 2046's `bchars`: letters, digits, `'()+_,-./:=?` and the space, which cannot end a boundary. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/**
 * The boundary a Content-Type's parameters name, as bytes of their own (the
 * caller wipes them: a client chooses its boundary, a marker as well as
 * anything); a string saying what is wrong if there is none or it breaks
 * RFC 2046's rules (1 to 70 of its characters).
 */
export function formBoundary(parameters: ReadonlyMap<string, string>): Buffer | string {
  const boundary = parameters.get('boundary');
  if (!boundary) return FORM_MESSAGES.noBoundary;
  if (!BOUNDARY.test(boundary)) return FORM_MESSAGES.badBoundary;
  const bytes = ownedBuffer(boundary.length);
  bytes.write(boundary, 'latin1');
  return bytes;
}

class FormError extends Error {}

/**
 * The parts of the form in `body` whose boundary is `boundary`: at most
 * `maxParts`. Decodes the names in place (see above).
 */
export function parseForm(body: Buffer, boundary: Uint8Array, maxParts: number): FormParse {
  try {
    return { ok: true, parts: readParts(body, boundary, maxParts) };
  } catch (error) {
    if (error instanceof FormError) return { ok: false, message: error.message };
    throw error;
  }
}

function readParts(body: Buffer, boundary: Uint8Array, maxParts: number): FormPart[] {
  const delimiter = ownedBuffer(boundary.length + 4);
  delimiter.write('\r\n--', 'latin1');
  delimiter.set(boundary, 4);
  try {
    return partsBetween(body, boundary, delimiter, maxParts);
  } finally {
    wipe(delimiter);
  }
}

function partsBetween(body: Buffer, boundary: Uint8Array, delimiter: Buffer, maxParts: number): FormPart[] {
  // The first boundary line: at the very start, or after a preamble (which is ignored) and a CRLF.
  let at: number;
  if (body[0] === DASH && body[1] === DASH && body.subarray(2, 2 + boundary.length).equals(boundary)) at = 0;
  else {
    const found = body.indexOf(delimiter);
    if (found < 0) throw new FormError(FORM_MESSAGES.noOpeningBoundary);
    at = found + 2;
  }
  const parts: FormPart[] = [];
  for (;;) {
    // `at` is on the `--` of a boundary line.
    const i = at + 2 + boundary.length;
    if (body[i] === DASH && body[i + 1] === DASH) return parts;
    // RFC 2046 lets blanks follow a boundary, but busboy drops the part that follows them, without a word: refused.
    if (i >= body.length) throw new FormError(FORM_MESSAGES.unterminated);
    if (body[i] !== CR || body[i + 1] !== LF) throw new FormError(FORM_MESSAGES.badBoundaryLine);
    if (parts.length === maxParts) throw new FormError(FORM_MESSAGES.tooManyParts(maxParts));
    const { contentStart, name, filename } = readHeaders(body, i + 2);
    // Searched for from the boundary line's own CRLF: a delimiter among the headers (a boundary holding `:` reads as a
    // header line) or sharing the CRLF of their blank line (`--B` as the content's first line) is refused. Readers part
    // ways there (busboy takes the next part's headers for this part's content), and RFC 2046 lets no line of a part
    // start with the boundary.
    const end = body.indexOf(delimiter, i);
    if (end < 0) throw new FormError(FORM_MESSAGES.unterminated);
    if (end < contentStart) throw new FormError(FORM_MESSAGES.boundaryInHeaders);
    const part: FormPart = { name, content: { start: contentStart, end } };
    if (filename) part.filename = filename;
    parts.push(part);
    at = end + 2;
  }
}

/** A part's headers from `start`: where its content starts, and its names from Content-Disposition. */
function readHeaders(body: Buffer, start: number): { contentStart: number; name: Range; filename?: Range } {
  const limit = Math.min(body.length, start + MAX_HEADER_BYTES);
  // Past the headers' end: the body ended (a part cut off), or the headers are too long.
  const beyond = () => new FormError(limit === body.length ? FORM_MESSAGES.unterminated : FORM_MESSAGES.headersTooLong);
  let disposition: { name?: Range; filename?: Range } | undefined;
  let i = start;
  for (let lines = 0; ; lines++) {
    if (i + 1 >= limit) throw beyond();
    if (body[i] === CR && body[i + 1] === LF) break;
    if (lines === MAX_HEADER_LINES) throw new FormError(FORM_MESSAGES.tooManyHeaderLines(MAX_HEADER_LINES));
    const nameStart = i;
    while (i < limit && TOKEN[body[i]!] === 1) i++;
    if (i >= limit) throw beyond();
    if (i === nameStart || body[i] !== COLON) throw new FormError(FORM_MESSAGES.badHeader);
    const isDisposition = equalsIgnoringCase(body, nameStart, i, CONTENT_DISPOSITION);
    i++;
    while (i < limit && isBlank(body[i])) i++;
    const valueStart = i;
    // A value holds visible bytes, spaces and tabs; it ends at CRLF (a folded line is refused).
    while (i < limit && (body[i]! >= 0x20 || body[i] === 0x09) && body[i] !== 0x7f) i++;
    if (i + 1 >= limit) throw beyond();
    if (body[i] !== CR || body[i + 1] !== LF || isBlank(body[i + 2])) throw new FormError(FORM_MESSAGES.badHeader);
    // Of repeated Content-Disposition headers the first counts, as with busboy.
    if (isDisposition && disposition === undefined) disposition = readDisposition(body, valueStart, i);
    i += 2;
  }
  if (disposition === undefined) throw new FormError(FORM_MESSAGES.noDisposition);
  if (disposition.name === undefined) throw new FormError(FORM_MESSAGES.noName);
  const headers = { contentStart: i + 2, name: disposition.name };
  return disposition.filename ? { ...headers, filename: disposition.filename } : headers;
}

/** Which of the parameters the service reads `body[start, end)` names, if any. */
function parameterKey(body: Buffer, start: number, end: number): 'name' | 'filename' | 'filenameStar' | undefined {
  if (equalsIgnoringCase(body, start, end, NAME)) return 'name';
  if (equalsIgnoringCase(body, start, end, FILENAME)) return 'filename';
  if (equalsIgnoringCase(body, start, end, FILENAME_STAR)) return 'filenameStar';
  return undefined;
}

/** `form-data; name="..."; filename="..."` in `body[start, end)`, its values decoded in place. */
function readDisposition(body: Buffer, start: number, end: number): { name?: Range; filename?: Range } {
  let i = start;
  while (i < end && TOKEN[body[i]!] === 1) i++;
  if (!equalsIgnoringCase(body, start, i, FORM_DATA)) throw new FormError(FORM_MESSAGES.notFormData);
  const found: { name?: Range; filename?: Range; filenameStar?: Range } = {};
  for (;;) {
    while (i < end && isBlank(body[i])) i++;
    if (i === end) break;
    if (body[i] !== SEMICOLON) throw new FormError(FORM_MESSAGES.badDisposition);
    i++;
    while (i < end && isBlank(body[i])) i++;
    const nameStart = i;
    while (i < end && TOKEN[body[i]!] === 1) i++;
    if (i === nameStart || body[i] !== EQUALS) throw new FormError(FORM_MESSAGES.badDisposition);
    const nameEnd = i;
    i++;
    let value: Range;
    if (body[nameEnd - 1] === STAR) {
      const valueEnd = extendedEnd(body, i, end);
      value = extendedValue(body, i, valueEnd);
      i = valueEnd;
    } else if (body[i] === QUOTE) {
      const quoted = quotedValue(body, i + 1, end);
      value = quoted.value;
      i = quoted.next;
    } else {
      const valueStart = i;
      while (i < end && TOKEN[body[i]!] === 1) i++;
      if (i === valueStart) throw new FormError(FORM_MESSAGES.badDisposition);
      value = { start: valueStart, end: i };
    }
    // A name given twice is refused: busboy keeps the first, and a reader that keeps the last sees another part.
    const key = parameterKey(body, nameStart, nameEnd);
    if (key !== undefined) {
      if (found[key] !== undefined) throw new FormError(FORM_MESSAGES.repeatedParameter);
      found[key] = value;
    }
  }
  const names: { name?: Range; filename?: Range } = {};
  if (found.name) names.name = found.name;
  const filename = found.filenameStar ?? found.filename;
  if (filename) names.filename = filename;
  return names;
}

/**
 * A quoted string's content from `start` (after its `"`), its escapes
 * undone in place; and the index after its closing `"`. Only `\"` and `\\`
 * are escapes: a backslash before any other byte stays (a Windows path
 * keeps its backslashes, and is then refused as a name), as with busboy.
 */
function quotedValue(body: Buffer, start: number, end: number): { value: Range; next: number } {
  let write = start;
  for (let i = start; i < end; i++) {
    let b = body[i]!;
    if (b === QUOTE) return { value: { start, end: write }, next: i + 1 };
    if (b === BACKSLASH && (body[i + 1] === QUOTE || body[i + 1] === BACKSLASH) && i + 1 < end) b = body[++i]!;
    body[write++] = b;
  }
  throw new FormError(FORM_MESSAGES.badDisposition);
}

/** The end of an RFC 8187 value from `start`: the first byte that is neither a token byte nor `%`. */
function extendedEnd(body: Buffer, start: number, end: number): number {
  let i = start;
  while (i < end && (TOKEN[body[i]!] === 1 || body[i] === PERCENT)) i++;
  return i;
}

/** The first `'` in `body[from, to)`, or -1. */
function apostrophe(body: Buffer, from: number, to: number): number {
  for (let i = from; i < to; i++) if (body[i] === APOSTROPHE) return i;
  return -1;
}

/**
 * An RFC 8187 value in `body[start, end)`, `UTF-8'<language>'<percent-
 * encoded bytes>`: the bytes decoded in place. Only UTF-8 is taken: an
 * asset's name is UTF-8 (as is every file name a browser or curl sends).
 */
function extendedValue(body: Buffer, start: number, end: number): Range {
  const charsetEnd = apostrophe(body, start, end);
  if (charsetEnd < 0) throw new FormError(FORM_MESSAGES.badDisposition);
  if (!equalsIgnoringCase(body, start, charsetEnd, UTF8)) throw new FormError(FORM_MESSAGES.notUtf8FileName);
  const languageEnd = apostrophe(body, charsetEnd + 1, end);
  // An empty value is refused too, as busboy does.
  if (languageEnd < 0 || languageEnd + 1 === end) throw new FormError(FORM_MESSAGES.badDisposition);
  let write = start;
  for (let i = languageEnd + 1; i < end; i++) {
    let b = body[i]!;
    // RFC 8187's attr-char is a token byte but `*`, `'` and `%` (which starts an escape).
    if (b === APOSTROPHE || b === STAR) throw new FormError(FORM_MESSAGES.badDisposition);
    if (b === PERCENT) {
      const high = hexValue(body[i + 1]);
      const low = hexValue(body[i + 2]);
      if (high < 0 || low < 0 || i + 2 >= end) throw new FormError(FORM_MESSAGES.badDisposition);
      b = (high << 4) | low;
      i += 2;
    }
    body[write++] = b;
  }
  return { start, end: write };
}
