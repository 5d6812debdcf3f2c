/**
 * The request body's check, byte by byte: it is one valid JSON text (RFC
 * 8259, UTF-8), a top-level object whose `data` is an object, whose
 * `template` is a string, whose optional `assets` maps file names to
 * base64, whose optional `typst` names an engine and whose optional `pdf`
 * holds export options; and where those fields are, as byte ranges of the
 * body (`typst` and `pdf` as the fixed values they name).
 *
 * The JSON itself is read by json-scanner.ts, which accepts exactly what
 * `JSON.parse` accepts; this file finds the top-level fields and checks
 * them. As with `JSON.parse` and Typst's `json()`, of duplicate keys the
 * last one counts. Every message is worded in messages.ts.
 *
 * src/bytes/ holds what both processes read, and this check is one of them:
 * the server runs it on every body (request/check-thread.ts for large ones),
 * and a worker runs it again, exactly, on a large body whose `data` was only
 * located (render/job-run.ts). So bytes/ is the ground floor of the request's
 * path: it imports only messages.ts, api-values.ts, engines.ts and
 * retention/, never src/request/ (the server's intake) or anything above.
 */
import { isUtf8 } from 'node:buffer';
import {
  EINVOICE_PROFILES,
  EINVOICE_STANDARDS,
  type EinvoiceProfile,
  DEFAULT_MAX_IMAGE_PIXELS,
  PDF_STANDARDS,
  type EinvoiceOptions,
  type PdfOptions,
  type PdfStandard,
  SIGNATURE_FIELDS,
  SIGNATURE_TEXT_CHARS,
} from '../api-values.js';
import { AssetTable } from './asset-table.js';
import { dataEndFromBack } from './data-end.js';
import { hex4, withUnescaped } from './json-string.js';
import { fault, JsonError, JsonScanner, kindAt, skipWhitespace } from './json-scanner.js';
import { CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE } from './ascii.js';
import {
  BODY_MESSAGES,
  einvoiceXmlName,
  invalidJson,
  MESSAGES,
  notUtf8,
  signatureText,
  templateLoneSurrogate,
  JSON_FAULTS,
} from '../messages.js';
import { nameProblem } from './asset-names.js';
import { bomLength, firstInvalidUtf8, placeInJsonString, placeOf } from './text-position.js';
import { ENGINE_IDS, ENGINE_VERSIONS, type EngineId } from '../engines.js';
import type { AssetEntry, BodyError, BodyLayout, Kind, Range } from './layout.js';

export type BodyCheck = { ok: true; layout: BodyLayout } | { ok: false; error: BodyError };

export interface CheckOptions {
  /** An image asset whose header declares more pixels is refused (MAX_IMAGE_PIXELS). */
  maxImagePixels: number;
  /**
   * A body at least this long may leave its `data` object to Typst (data-end.ts);
   * LARGE_DATA_BYTES unless set, Infinity for an exact check of everything.
   */
  largeDataBytes?: number;
}

/** Bodies from this size on are checked off the event loop (check-thread.ts), and may leave `data` to Typst. */
export const LARGE_DATA_BYTES = 256 * 1024;

/** A top-level field's occurrence: where its value is and what kind it is. */
export interface Field {
  value: Range;
  kind: Kind;
  /** Only for `template`: where its first unpaired surrogate escape is, if any (byte of the `\`). */
  loneSurrogate?: number;
  /** Only for `data`: whether it holds an unpaired surrogate escape anywhere. */
  hasLoneSurrogate?: boolean;
  /** Only for `data`: its end was found from the back, its content left to Typst (data-end.ts). */
  unchecked?: boolean;
  /** Only for `assets`: its entries, met as they were scanned. */
  table?: AssetTable;
  /** Only for `pdf`: its members (lastMembers). */
  members?: LastMembers<PdfKey>;
}

/** A member of an object: its name and value (strings between their quotes). */
interface Member {
  name: Range;
  value: Range;
  kind: Kind;
}

/** Of an object whose keys may only be `K`: the last member of each (as JSON.parse keeps it), and whether it has another key. */
export interface LastMembers<K extends string> {
  last: Map<K, Member>;
  otherKey: boolean;
}

/** Which top-level field a key names, compared after JSON unescaping. */
const FIELD_NAMES = ['data', 'template', 'assets', 'typst', 'pdf'] as const;
type FieldName = (typeof FIELD_NAMES)[number];

/** Which of the top-level fields the raw key `body[start, end)` names, compared after unescaping. */
function fieldOf(body: Uint8Array, start: number, end: number): FieldName | undefined {
  return oneOf(body, { start, end }, FIELD_NAMES);
}

/** A body the quick check cannot vouch for: it is checked exactly. */
class CheckExactly extends Error {}

/**
 * Checks the JSON text in `body[start..]` and finds the last occurrence of
 * each field of the top-level object; throws JsonError at the first fault.
 * With `quick`, the first `data` object's end is found from the back and
 * its content is not read (data-end.ts); a second `data` after it throws
 * CheckExactly, since the first one's content would count for nothing.
 */
function parse(
  body: Uint8Array,
  start: number,
  tables: AssetTable[],
  quick: boolean,
): { topIsObject: boolean; fields: Partial<Record<FieldName, Field>> } {
  const fields: Partial<Record<FieldName, Field>> = {};
  const scanner = new JsonScanner(body);
  let walked = false;
  let i = skipWhitespace(body, start);
  if (body[i] !== OPEN_BRACE) {
    const end = skipWhitespace(body, scanner.skipValue(i));
    if (end < body.length) throw new JsonError(JSON_FAULTS.trailingData, end);
    return { topIsObject: false, fields };
  }
  i = skipWhitespace(body, i + 1);
  if (body[i] !== CLOSE_BRACE) {
    for (;;) {
      if (body[i] !== QUOTE) throw fault(body, i);
      const keyEnd = scanner.scanString(i + 1);
      const name = fieldOf(body, i + 1, keyEnd - 1);
      i = skipWhitespace(body, keyEnd);
      if (body[i] !== COLON) throw fault(body, i);
      i = skipWhitespace(body, i + 1);
      const kind = kindAt(body, i);
      scanner.loneSurrogate = -1;
      if (name === 'data' && fields.data?.unchecked) throw new CheckExactly();
      // One walk from the back per check, for the first `data` object: a walk that gave up is not tried again.
      const walk: boolean = quick && !walked && name === 'data' && kind === 'object';
      walked ||= walk;
      const dataEnd = walk ? dataEndFromBack(body, i) : undefined;
      let end: number;
      if (dataEnd !== undefined) {
        end = dataEnd;
        fields.data = { value: { start: i, end }, kind, unchecked: true };
      } else if (name === 'assets' && kind === 'object') {
        const table = new AssetTable(body);
        tables.push(table);
        end = scanner.scanMembers(i, (member, value, valueKind) => table.add(member, value, valueKind));
        fields.assets = { value: { start: i, end }, kind, table };
      } else if (name === 'pdf' && kind === 'object') {
        const scanned = scanPdfMembers(scanner, body, i);
        end = scanned.end;
        fields.pdf = { value: { start: i, end }, kind, members: scanned.members };
      } else {
        end = scanner.skipValue(i);
        const { loneSurrogate } = scanner;
        if (name === 'template' && kind === 'string') {
          fields.template = { value: { start: i + 1, end: end - 1 }, kind, loneSurrogate: loneSurrogate < 0 ? undefined : loneSurrogate };
        } else if (name !== undefined) {
          fields[name] = { value: { start: i, end }, kind, hasLoneSurrogate: loneSurrogate >= 0 };
        }
      }
      i = skipWhitespace(body, end);
      if (body[i] === CLOSE_BRACE) break;
      if (body[i] !== COMMA) throw fault(body, i);
      i = skipWhitespace(body, i + 1);
    }
  }
  const end = skipWhitespace(body, i + 1);
  if (end < body.length) throw new JsonError(JSON_FAULTS.trailingData, end);
  return { topIsObject: true, fields };
}

export const refusal = (text: string): BodyCheck => ({ ok: false, error: { status: 400, message: text } });
const isNull = (body: Uint8Array, field: Field) => field.kind === 'literal' && body[field.value.start] === 0x6e;

/** The UTF-8 bytes of each fixed value a member is compared with (oneOf), encoded once. */
const ENCODED = new Map<string, Buffer>();

function encoded(value: string): Buffer {
  let bytes = ENCODED.get(value);
  if (!bytes) {
    bytes = Buffer.from(value);
    ENCODED.set(value, bytes);
  }
  return bytes;
}

/**
 * Which of `values` the JSON string `range` (between its quotes) equals
 * after unescaping, compared as bytes: where it lies when it has no escape,
 * with no copy (see lastMembers).
 */
function oneOf<T extends string>(body: Uint8Array, range: Range, values: readonly T[]): T | undefined {
  return withUnescaped(body, range, (bytes, start, end) => values.find((value) => sameBytes(bytes, { start, end }, encoded(value))));
}

/** Whether `body[range]` is `expected`, byte for byte (also form-check.ts's, for names as they lie in a form). */
export function sameBytes(body: Uint8Array, range: Range, expected: Uint8Array): boolean {
  if (range.end - range.start !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (body[range.start + i] !== expected[i]) return false;
  return true;
}

const inQuotes = (value: Range): Range => ({ start: value.start + 1, end: value.end - 1 });
const ENGINE_NAMES = [...ENGINE_IDS, ...ENGINE_IDS.map((id) => ENGINE_VERSIONS[id])];
const PDF_KEYS = ['standard', 'tagged', 'einvoice', 'signature'] as const;
type PdfKey = (typeof PDF_KEYS)[number];
const EINVOICE_KEYS = ['xml', 'profile'] as const;

/** `typst`: "0.11" or "0.14", or the exact version either embeds. */
function checkTypst(body: Uint8Array, field: Field): EngineId | BodyCheck {
  const name = field.kind === 'string' ? oneOf(body, inQuotes(field.value), ENGINE_NAMES) : undefined;
  const engine = ENGINE_IDS.find((id) => id === name || ENGINE_VERSIONS[id] === name);
  return engine ?? refusal(MESSAGES.typstField);
}

/**
 * The members of the object at `start` whose keys may only be `keys`, and
 * where it ends. Nothing is kept of a key's earlier members, nor read of
 * them, and a key is compared where it lies: while each repetition was
 * kept, copied and checked, a body of 700,000 repetitions of a key (8 MiB)
 * took 1.1 to 2 s to check against 18 ms for as many bytes of plain JSON,
 * all of it on the one thread that checks large bodies (found by a
 * hostile review); now 80 to 140 ms.
 */
function lastMembers<K extends string>(
  scanner: JsonScanner,
  body: Uint8Array,
  start: number,
  keys: readonly K[],
): { members: LastMembers<K>; end: number } {
  const last = new Map<K, Member>();
  let otherKey = false;
  const end = scanner.scanMembers(start, (name, value, kind) => {
    if (otherKey) return;
    const key = oneOf(body, name, keys);
    if (key === undefined) otherKey = true;
    else last.set(key, { name, value, kind });
  });
  return { members: { last, otherKey }, end };
}

/** The `pdf` object at `start` (also a form's `pdf` part: form-check.ts). */
export function scanPdfMembers(scanner: JsonScanner, body: Uint8Array, start: number): { members: LastMembers<PdfKey>; end: number } {
  return lastMembers(scanner, body, start, PDF_KEYS);
}

/** `pdf.einvoice`: an object of `xml` (an asset's or attachment's name) and `profile` (one of Factur-X's); of a repeated key the last counts. */
function checkEinvoice(body: Uint8Array, entry: Member): EinvoiceOptions | BodyCheck {
  if (entry.kind !== 'object') return refusal(MESSAGES.einvoiceField);
  // The body is valid JSON by now: this second walk, of the last `einvoice` alone, only finds its members.
  const { last, otherKey } = lastMembers(new JsonScanner(body), body, entry.value.start, EINVOICE_KEYS).members;
  if (otherKey) return refusal(MESSAGES.einvoiceKey);
  const options: EinvoiceOptions = {};
  for (const [key, member] of last) {
    if (key === 'profile') {
      const profile = member.kind === 'string' ? oneOf<EinvoiceProfile>(body, member.value, EINVOICE_PROFILES) : undefined;
      if (profile === undefined) return refusal(MESSAGES.einvoiceProfile);
      options.profile = profile;
    } else {
      if (member.kind !== 'string') return refusal(MESSAGES.einvoiceXmlNotString);
      const problem = withUnescaped(body, member.value, nameProblem);
      if (problem !== null) return refusal(einvoiceXmlName(problem));
      options.xml = member.value;
    }
  }
  return options;
}

/** What `pdf` asks for: export options for the engine, and a signature for the server to add. */
export interface PdfRequest {
  options: PdfOptions;
  signature?: NonNullable<BodyLayout['signature']>;
}

/**
 * `pdf`: an object of `standard` (one of Typst 0.14's), `tagged` (a boolean),
 * `einvoice` (see checkEinvoice) and `signature` (see checkSignature); of a
 * repeated key the last counts. Also a form's `pdf` part (form-check.ts).
 */
export function checkPdfField(body: Uint8Array, field: Pick<Field, 'kind' | 'members'>): PdfRequest | BodyCheck {
  if (field.kind !== 'object') return refusal(MESSAGES.pdfField);
  const { last, otherKey } = field.members!;
  if (otherKey) return refusal(MESSAGES.pdfKey);
  const request: PdfRequest = { options: {} };
  for (const [key, entry] of last) {
    if (key === 'einvoice') {
      const einvoice = checkEinvoice(body, entry);
      if ('ok' in einvoice) return einvoice;
      request.options.einvoice = einvoice;
    } else if (key === 'standard') {
      const standard = entry.kind === 'string' ? oneOf<PdfStandard>(body, entry.value, PDF_STANDARDS) : undefined;
      if (standard === undefined) return refusal(MESSAGES.pdfStandard);
      request.options.standard = standard;
    } else if (key === 'tagged') {
      const b = body[entry.value.start];
      if (entry.kind !== 'literal' || b === 0x6e) return refusal(MESSAGES.pdfTagged);
      request.options.tagged = b === 0x74;
    } else {
      const signature = checkSignature(body, entry.value, entry.kind);
      if ('ok' in signature) return signature;
      request.signature = signature;
    }
  }
  const { options } = request;
  if (options.einvoice && options.standard && !(EINVOICE_STANDARDS as readonly string[]).includes(options.standard)) {
    return refusal(MESSAGES.einvoiceStandard);
  }
  return request;
}

/**
 * `pdf.signature`: an object of `reason`, `location` and `contact`, each an
 * optional string of at most SIGNATURE_TEXT_CHARS characters of valid
 * Unicode; of a repeated key the last counts. The texts stay where they are
 * in the body (ranges); only their lengths are read here.
 */
function checkSignature(body: Uint8Array, value: Range, kind: Kind): NonNullable<BodyLayout['signature']> | BodyCheck {
  if (kind !== 'object') return refusal(MESSAGES.pdfSignature);
  // As checkEinvoice's: a second walk, of the last `signature` alone.
  const { last, otherKey } = lastMembers(new JsonScanner(body), body, value.start, SIGNATURE_FIELDS).members;
  if (otherKey) return refusal(MESSAGES.pdfSignatureKey);
  const signature: NonNullable<BodyLayout['signature']> = {};
  for (const [key, member] of last) {
    if (member.kind !== 'string' || !isShortText(body, member.value)) return refusal(signatureText(key));
    signature[key] = member.value;
  }
  return signature;
}

/** Whether the JSON string `range` decodes to valid Unicode of at most SIGNATURE_TEXT_CHARS code points (read where it lies when it has no escape, as oneOf). */
function isShortText(body: Uint8Array, range: Range): boolean {
  return withUnescaped(body, range, (bytes, from, to) => {
    let chars = 0;
    for (let i = from; i < to && chars <= SIGNATURE_TEXT_CHARS; i++) if ((bytes[i]! & 0xc0) !== 0x80) chars++;
    return chars <= SIGNATURE_TEXT_CHARS && isUtf8(bytes.subarray(from, to));
  });
}

export function checkBody(body: Uint8Array, options: CheckOptions = { maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS }): BodyCheck {
  const start = bomLength(body);
  if (body.length === start) return refusal(BODY_MESSAGES.empty);
  if (!isUtf8(body.subarray(start))) return refusal(notUtf8(firstInvalidUtf8(body, start)));
  const tables: AssetTable[] = [];
  try {
    // A refusal is always worded by the exact check: the quick one may have missed an earlier fault in `data`.
    if (body.length >= (options.largeDataBytes ?? LARGE_DATA_BYTES)) {
      try {
        const quick = checkFields(body, start, tables, options, true);
        if (quick.ok) return quick;
      } catch (error) {
        if (!(error instanceof CheckExactly)) throw error;
      }
    }
    return checkFields(body, start, tables, options, false);
  } finally {
    for (const table of tables) table.wipe();
  }
}

function checkFields(body: Uint8Array, start: number, tables: AssetTable[], options: CheckOptions, quick: boolean): BodyCheck {
  let result: ReturnType<typeof parse>;
  try {
    result = parse(body, start, tables, quick);
  } catch (error) {
    if (!(error instanceof JsonError)) throw error;
    const at = Math.min(error.at, body.length);
    return refusal(invalidJson(error.what, placeOf(body, at, start), at));
  }
  if (!result.topIsObject) return refusal(BODY_MESSAGES.notAnObject);
  const { data, template, assets, typst, pdf } = result.fields;
  if (!data) return refusal(BODY_MESSAGES.missingData);
  if (!template) return refusal(BODY_MESSAGES.missingTemplate);
  if (data.kind !== 'object') return refusal(BODY_MESSAGES.dataNotObject);
  if (template.kind !== 'string') return refusal(BODY_MESSAGES.templateNotString);
  if (template.loneSurrogate !== undefined) {
    const place = placeInJsonString(body, template.value, template.loneSurrogate);
    return refusal(templateLoneSurrogate(hex4(body, template.loneSurrogate + 2), place));
  }
  if (data.hasLoneSurrogate) return refusal(BODY_MESSAGES.dataLoneSurrogate);
  let engine: EngineId | undefined;
  if (typst && !isNull(body, typst)) {
    const checked = checkTypst(body, typst);
    if (typeof checked !== 'string') return checked;
    engine = checked;
  }
  let pdfRequest: PdfRequest | undefined;
  if (pdf && !isNull(body, pdf)) {
    const checked = checkPdfField(body, pdf);
    if ('ok' in checked) return checked;
    pdfRequest = checked;
  }
  let checkedAssets: AssetEntry[] = [];
  if (assets && !isNull(body, assets)) {
    if (assets.kind !== 'object') return refusal(BODY_MESSAGES.assetsNotObject);
    const outcome = assets.table!.finish(options.maxImagePixels);
    if (!Array.isArray(outcome)) return { ok: false, error: outcome };
    checkedAssets = outcome;
  }
  const layout: BodyLayout = { data: data.value, template: template.value, assets: checkedAssets };
  if (data.unchecked) layout.dataUnchecked = true;
  if (engine) layout.typst = engine;
  if (pdfRequest && Object.keys(pdfRequest.options).length > 0) layout.pdf = pdfRequest.options;
  if (pdfRequest?.signature) layout.signature = pdfRequest.signature;
  return { ok: true, layout };
}
