/**
 * The check of a `multipart/form-data` body, the form counterpart of
 * json-check.ts: the parts (multipart.ts) make the same layout a JSON body
 * does, so the worker takes either. `template` and `data` (files or
 * fields), optional `typst` and `pdf` fields (the values JSON takes; `pdf`
 * as JSON text), and every other part with a file name is an asset under
 * that name, its bytes as they are. A part of another name without a file
 * name, or a second `template`, `data`, `typst`, `pdf` or file of one name,
 * is refused. The layout marks the body a form (BodyLayout.form): its
 * ranges are text and files as sent, not JSON string content or base64.
 */
import { isUtf8 } from 'node:buffer';
import {
  BODY_MESSAGES,
  DUPLICATE_ASSET,
  ASSET_REFUSAL,
  FORM_FIELD_REFUSAL,
  FORM_MESSAGES,
  formPartInvalidJson,
  MESSAGES,
  JSON_FAULTS,
} from '../messages.js';
import { bomLength, firstInvalidUtf8, placeOf } from '../bytes/text-position.js';
import { ENGINE_IDS, ENGINE_VERSIONS, type EngineId } from '../engines.js';
import { nameProblem } from '../bytes/asset-names.js';
import { hashOf, MAX_ASSETS } from '../bytes/asset-table.js';
import { oversizedImage, BytesReader } from '../bytes/image-size.js';
import {
  type BodyCheck,
  type CheckOptions,
  checkPdfField,
  refusal,
  type PdfRequest,
  sameBytes,
  scanPdfMembers,
} from '../bytes/json-check.js';
import { JsonError, JsonScanner, skipWhitespace } from '../bytes/json-scanner.js';
import { OPEN_BRACE } from '../bytes/ascii.js';
import type { AssetEntry, BodyError, Range } from '../bytes/layout.js';
import { type FormPart, parseForm } from './multipart.js';

const FIELDS = ['template', 'data', 'typst', 'pdf'] as const;
type FieldName = (typeof FIELDS)[number];
const FIELD_BYTES = FIELDS.map((name) => Buffer.from(name));
/** The fields, and a file for each asset. */
const MAX_PARTS = FIELDS.length + MAX_ASSETS;

const fieldOf = (body: Uint8Array, name: Range): FieldName | undefined => {
  const found = FIELD_BYTES.findIndex((bytes) => sameBytes(body, name, bytes));
  return found < 0 ? undefined : FIELDS[found];
};

const namedError = (name: Range, before: string, after: string): BodyError => ({ status: 400, before, name, after, raw: true });
const assetError = (name: Range, problem: string) => namedError(name, ASSET_REFUSAL.beforeName, ASSET_REFUSAL.problem(problem));

/** The `data` part, which must be one JSON object: the range from its `{` to its `}`, or the 400. */
function dataObject(body: Buffer, range: Range): Range | BodyCheck {
  const text = body.subarray(range.start, range.end);
  if (!isUtf8(text)) return refusal(FORM_MESSAGES.dataNotUtf8(firstInvalidUtf8(text, 0)));
  const value = jsonValue('data', text);
  if ('ok' in value) return value;
  if (text[value.start] !== OPEN_BRACE) return refusal(BODY_MESSAGES.dataNotObject);
  if (value.loneSurrogate) return refusal(BODY_MESSAGES.dataLoneSurrogate);
  return { start: range.start + value.start, end: range.start + value.end };
}

/**
 * The one JSON value a part holds, white space around it, as [start, end) of `text`; else a 400 that says where it
 * breaks. A byte order mark before it is passed over, as at the start of a JSON body (a file saved by some editors
 * has one).
 */
function jsonValue(part: 'data' | 'pdf', text: Buffer): (Range & { loneSurrogate: boolean }) | BodyCheck {
  const scanner = new JsonScanner(text);
  try {
    const start = skipWhitespace(text, bomLength(text));
    const end = scanner.skipValue(start);
    const after = skipWhitespace(text, end);
    if (after < text.length) throw new JsonError(JSON_FAULTS.trailingData, after);
    return { start, end, loneSurrogate: scanner.loneSurrogate >= 0 };
  } catch (error) {
    if (!(error instanceof JsonError)) throw error;
    return refusal(formPartInvalidJson(part, error.what, placeOf(text, Math.min(error.at, text.length))));
  }
}

/** The `typst` field: the same names as in JSON, as plain text. */
function engineOf(body: Uint8Array, range: Range): EngineId | undefined {
  return ENGINE_IDS.find((id) => sameBytes(body, range, Buffer.from(id)) || sameBytes(body, range, Buffer.from(ENGINE_VERSIONS[id])));
}

export function checkForm(body: Buffer, boundary: Uint8Array, options: CheckOptions): BodyCheck {
  const parsed = parseForm(body, boundary, MAX_PARTS);
  if (!parsed.ok) return refusal(parsed.message);
  const fields: Partial<Record<FieldName, Range>> = {};
  const files: FormPart[] = [];
  for (const part of parsed.parts) {
    const field = fieldOf(body, part.name);
    if (field !== undefined) {
      if (fields[field]) return refusal(FORM_MESSAGES.duplicate(field));
      fields[field] = part.content;
    } else if (part.filename === undefined) {
      return { ok: false, error: namedError(part.name, FORM_FIELD_REFUSAL.beforeName, FORM_FIELD_REFUSAL.afterName) };
    } else if (part.filename.end > part.filename.start || part.content.end > part.content.start) {
      // A file input left empty: browsers send it with an empty file name and no bytes; it is no asset.
      files.push(part);
    }
  }
  const { template, data, typst, pdf } = fields;
  if (!data) return refusal(FORM_MESSAGES.missingData);
  if (!template) return refusal(FORM_MESSAGES.missingTemplate);
  if (!isUtf8(body.subarray(template.start, template.end))) {
    return refusal(FORM_MESSAGES.templateNotUtf8(firstInvalidUtf8(body.subarray(template.start, template.end), 0)));
  }
  const dataRange = dataObject(body, data);
  if (!('start' in dataRange)) return dataRange;
  let engine: EngineId | undefined;
  if (typst) {
    engine = engineOf(body, typst);
    if (engine === undefined) return refusal(MESSAGES.typstField);
  }
  let pdfRequest: PdfRequest | undefined;
  if (pdf) {
    const checked = pdfField(body, pdf);
    if ('ok' in checked) return checked;
    pdfRequest = checked;
  }
  const assets = checkFiles(body, files, options.maxImagePixels);
  if (!Array.isArray(assets)) return { ok: false, error: assets };
  return {
    ok: true,
    layout: {
      data: dataRange,
      template,
      assets,
      form: true,
      ...(engine ? { typst: engine } : {}),
      ...(pdfRequest && Object.keys(pdfRequest.options).length > 0 ? { pdf: pdfRequest.options } : {}),
      ...(pdfRequest?.signature ? { signature: pdfRequest.signature } : {}),
    },
  };
}

/** The `pdf` field: a JSON object as the JSON body's `pdf` holds, checked by the same rules. */
function pdfField(body: Buffer, range: Range): PdfRequest | BodyCheck {
  const text = body.subarray(range.start, range.end);
  if (!isUtf8(text)) return refusal(FORM_MESSAGES.pdfNotJson);
  const value = jsonValue('pdf', text);
  if ('ok' in value) return value;
  const { start } = value;
  if (text[start] !== OPEN_BRACE) return refusal(FORM_MESSAGES.pdfNotJson);
  // Scanned in the whole body, so that the places it gives (an e-invoice's XML name) are the body's, as the worker
  // reads them. jsonValue found one JSON value in the part, so the scan ends inside it.
  const { members } = scanPdfMembers(new JsonScanner(body), body, range.start + start);
  return checkPdfField(body, { kind: 'object', members });
}

/**
 * The files as assets: each name checked (asset-names.ts), no name twice
 * (found through a hash of its bytes, as asset-table.ts does: linear),
 * at most MAX_ASSETS, and no image over the pixel limit.
 */
function checkFiles(body: Buffer, files: FormPart[], maxImagePixels: number): AssetEntry[] | BodyError {
  if (files.length > MAX_ASSETS) return { status: 400, message: FORM_MESSAGES.tooManyAssets(MAX_ASSETS) };
  const byHash = new Map<number, Range[]>();
  const assets: AssetEntry[] = [];
  for (const file of files) {
    const name = file.filename!;
    const problem = nameProblem(body, name.start, name.end);
    if (problem) return assetError(name, problem);
    const hash = hashOf(body, name.start, name.end);
    const same = byHash.get(hash);
    if (same?.some((other) => body.subarray(other.start, other.end).equals(body.subarray(name.start, name.end)))) {
      return assetError(name, DUPLICATE_ASSET);
    }
    if (same) same.push(name);
    else byHash.set(hash, [name]);
    const size = oversizedImage(new BytesReader(body, file.content.start, file.content.end), maxImagePixels);
    if (size) return namedError(name, ASSET_REFUSAL.beforeName, ASSET_REFUSAL.imageTooLarge(size.width, size.height, maxImagePixels));
    assets.push({ name, value: file.content });
  }
  return assets;
}
