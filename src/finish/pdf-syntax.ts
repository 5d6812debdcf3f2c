/**
 * PDF's syntax (ISO 32000-1, 7.2 and 7.3) as byte offsets into the file:
 * its tokens, where a value ends, a dictionary's entries, an array's items,
 * integers, names and references. Both finishing steps read a PDF through
 * these (pdf-objects.ts finds the objects, pdf-values.ts reads one into
 * values). Nothing here makes a string of the PDF's bytes: a PDF carries
 * request content (the document's text, its title), which must stay in
 * buffers that are wiped.
 *
 * Hand-written because the npm PDF libraries (pdf-lib and the like) load
 * and rewrite a whole document, where an incremental update must leave
 * every byte Typst wrote as it is. Every walk is linear in the bytes it
 * passes, and nesting is counted, not recursed into, so no document can
 * exhaust the stack.
 */

export class PdfSyntaxError extends Error {
  override name = 'PdfSyntaxError';
}

/** Byte offsets, end exclusive. */
export interface Span {
  start: number;
  end: number;
}

/** A dictionary's entry: its key (the name, `/` included) and its value. */
export interface Entry {
  key: Span;
  value: Span;
}

export interface Ref {
  num: number;
  gen: number;
}

export const isWhite = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;
/** ( ) < > [ ] { } / % */
const isDelimiter = (b: number | undefined) =>
  b === 0x28 || b === 0x29 || b === 0x3c || b === 0x3e || b === 0x5b || b === 0x5d || b === 0x7b || b === 0x7d || b === 0x2f || b === 0x25;
const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;
/** Neither white space nor a delimiter: a byte of a number, a keyword or a name. */
export const isRegular = (b: number | undefined) => b !== undefined && !isWhite(b) && !isDelimiter(b);

/** The first byte at or after `i` that is not white space or inside a comment. */
export function skipSpace(pdf: Uint8Array, i: number): number {
  for (;;) {
    while (isWhite(pdf[i])) i++;
    if (pdf[i] !== 0x25) return i;
    while (i < pdf.length && pdf[i] !== 0x0a && pdf[i] !== 0x0d) i++;
  }
}

/** The end of the regular token (number, keyword, or a name's characters) that starts at `i`. */
export function tokenEnd(pdf: Uint8Array, i: number): number {
  while (isRegular(pdf[i])) i++;
  return i;
}

/** The end of the literal string whose `(` is at `i`: balanced parentheses, backslash escapes. */
export function literalStringEnd(pdf: Uint8Array, i: number): number {
  let depth = 0;
  for (; i < pdf.length; i++) {
    const b = pdf[i];
    if (b === 0x5c) i++;
    else if (b === 0x28) depth++;
    else if (b === 0x29 && --depth === 0) return i + 1;
  }
  throw new PdfSyntaxError('unterminated string');
}

/**
 * The end of the one token at `i` (which is not white space): a string, a
 * name, a number or keyword, or one of `<<`, `>>`, `[`, `]`.
 */
function nextTokenEnd(pdf: Uint8Array, i: number): number {
  const b = pdf[i];
  if (b === undefined) throw new PdfSyntaxError('unexpected end of file');
  if (b === 0x28) return literalStringEnd(pdf, i);
  if (b === 0x3c) {
    if (pdf[i + 1] === 0x3c) return i + 2;
    const close = pdf.indexOf(0x3e, i);
    if (close < 0) throw new PdfSyntaxError('unterminated hex string');
    return close + 1;
  }
  if (b === 0x3e) {
    if (pdf[i + 1] !== 0x3e) throw new PdfSyntaxError('stray >');
    return i + 2;
  }
  if (b === 0x5b || b === 0x5d || b === 0x7b || b === 0x7d) return i + 1;
  if (b === 0x2f) return tokenEnd(pdf, i + 1);
  const end = tokenEnd(pdf, i);
  if (end === i) throw new PdfSyntaxError('unexpected delimiter');
  return end;
}

/** The unsigned integer at `span`, or -1 if it is not one. */
export function integerAt(pdf: Uint8Array, span: Span): number {
  if (span.end <= span.start || span.end - span.start > 15) return -1;
  let value = 0;
  for (let i = span.start; i < span.end; i++) {
    if (!isDigit(pdf[i])) return -1;
    value = value * 10 + pdf[i]! - 0x30;
  }
  return value;
}

/**
 * The end of the value at `i` (which is not white space): a dictionary or
 * an array with all it holds, a reference `N G R`, or a single token.
 */
export function valueEnd(pdf: Uint8Array, i: number): number {
  let depth = 0;
  for (;;) {
    const b = pdf[i];
    const end = nextTokenEnd(pdf, i);
    if ((b === 0x3c && pdf[i + 1] === 0x3c) || b === 0x5b) depth++;
    else if ((b === 0x3e && pdf[i + 1] === 0x3e) || b === 0x5d) depth--;
    if (depth < 0) throw new PdfSyntaxError('unbalanced >> or ]');
    if (depth === 0) return isDigit(b) ? referenceEnd(pdf, i, end) : end;
    i = skipSpace(pdf, end);
  }
}

/** After the number at [start, end): the end of `N G R` if it is an integer and a reference follows, else `end`. */
export function referenceEnd(pdf: Uint8Array, start: number, end: number): number {
  if (integerAt(pdf, { start, end }) < 0) return end;
  const genStart = skipSpace(pdf, end);
  if (!isDigit(pdf[genStart])) return end;
  const genEnd = tokenEnd(pdf, genStart);
  if (integerAt(pdf, { start: genStart, end: genEnd }) < 0) return end;
  const r = skipSpace(pdf, genEnd);
  return pdf[r] === 0x52 && tokenEnd(pdf, r) === r + 1 ? r + 1 : end;
}

/** The reference `N G R` at `span`, if it is one. */
export function referenceAt(pdf: Uint8Array, span: Span): Ref | undefined {
  const numEnd = tokenEnd(pdf, span.start);
  const num = integerAt(pdf, { start: span.start, end: numEnd });
  const genStart = skipSpace(pdf, numEnd);
  const genEnd = tokenEnd(pdf, genStart);
  const gen = integerAt(pdf, { start: genStart, end: genEnd });
  const r = skipSpace(pdf, genEnd);
  if (num < 0 || gen < 0 || pdf[r] !== 0x52 || r + 1 !== span.end) return undefined;
  return { num, gen };
}

/** The entries of the dictionary whose `<<` is at `at`, and the end of its `>>`. */
export function dictionaryAt(pdf: Uint8Array, at: number): { entries: Entry[]; end: number } {
  if (pdf[at] !== 0x3c || pdf[at + 1] !== 0x3c) throw new PdfSyntaxError('expected a dictionary');
  const entries: Entry[] = [];
  let i = skipSpace(pdf, at + 2);
  while (!(pdf[i] === 0x3e && pdf[i + 1] === 0x3e)) {
    if (pdf[i] !== 0x2f) throw new PdfSyntaxError('expected a name as a dictionary key');
    const key = { start: i, end: tokenEnd(pdf, i + 1) };
    const valueStart = skipSpace(pdf, key.end);
    const value = { start: valueStart, end: valueEnd(pdf, valueStart) };
    entries.push({ key, value });
    i = skipSpace(pdf, value.end);
  }
  return { entries, end: i + 2 };
}

/** The items of the array whose `[` is at `at`. */
export function arrayItems(pdf: Uint8Array, at: number): Span[] {
  if (pdf[at] !== 0x5b) throw new PdfSyntaxError('expected an array');
  const items: Span[] = [];
  let i = skipSpace(pdf, at + 1);
  while (pdf[i] !== 0x5d) {
    const end = valueEnd(pdf, i);
    items.push({ start: i, end });
    i = skipSpace(pdf, end);
  }
  return items;
}

/** Whether `span` holds exactly `text` (ASCII: a name with its `/`, a keyword). */
export function bytesAre(pdf: Uint8Array, span: Span, text: string): boolean {
  if (span.end - span.start !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (pdf[span.start + i] !== text.charCodeAt(i)) return false;
  return true;
}

/** The value of the entry named `key` (e.g. `/Root`), if the dictionary has one. */
export function entryOf(pdf: Uint8Array, entries: Entry[], key: string): Span | undefined {
  let found: Span | undefined;
  // Of a repeated key the last counts, as for most readers.
  for (const entry of entries) if (bytesAre(pdf, entry.key, key)) found = entry.value;
  return found;
}

/** The unsigned integer at `at` (after white space), and where it ends; anything else is a PdfSyntaxError. */
export function readInteger(bytes: Uint8Array, at: number): { value: number; end: number } {
  const start = skipSpace(bytes, at);
  let end = start;
  while (isDigit(bytes[end])) end++;
  const value = integerAt(bytes, { start, end });
  if (value < 0) throw new PdfSyntaxError('expected an integer');
  return { value, end };
}

/** The direct unsigned integer of entry `key`; anything else is a PdfSyntaxError. */
export function integerOf(bytes: Uint8Array, dict: Entry[], key: string): number {
  const span = entryOf(bytes, dict, key);
  const value = span === undefined ? -1 : integerAt(bytes, span);
  if (value < 0) throw new PdfSyntaxError(`expected an integer ${key}`);
  return value;
}

/** The direct array of unsigned integers of entry `key`; anything else is a PdfSyntaxError. */
export function integersOf(bytes: Uint8Array, dict: Entry[], key: string): number[] {
  const span = entryOf(bytes, dict, key);
  if (span === undefined || bytes[span.start] !== 0x5b) throw new PdfSyntaxError(`expected an array ${key}`);
  return arrayItems(bytes, span.start).map((item) => {
    const value = integerAt(bytes, item);
    if (value < 0) throw new PdfSyntaxError(`expected integers in ${key}`);
    return value;
  });
}
