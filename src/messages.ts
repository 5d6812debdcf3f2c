/**
 * Every message the API answers with, in one table, and the few that are
 * built from a value (a time limit, a template's place, an asset's name).
 * Bodies are always `{"error": "<message>"}`. None shows a server path, and
 * none is ever logged: messages about a template or an asset quote it.
 *
 * An error reaches the client by one of three routes, all worded here:
 *   thrown        an HttpError or a pool error, answered by http/errors.ts
 *                 (and Node's own refusals, by http/client-errors.ts);
 *   body checker  a problem found in the request's bytes (src/body/), made
 *                 into an answer as bytes, since it may quote the body
 *                 (body/error-body.ts);
 *   worker        a template that failed, a PDF over its limit: the worker
 *                 makes the answer's bytes itself (render/worker.ts).
 *
 * Pure data and functions, so both the server and the workers use it.
 */
import type { JsonFault } from './body/json-scanner.js';
import type { TemplateFailure, Warning } from './render/job.js';
import type { Place } from './text-position.js';
import { ENGINE_IDS, PDF_STANDARDS, SIGNATURE_FIELDS, SIGNATURE_TEXT_CHARS, type SignatureField } from './typst-version.js';

const quotedList = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

export const MESSAGES = {
  unauthorized: 'Missing or invalid API Key',
  tooLarge: 'Payload exceeds 10MB limit',
  unsupportedMediaType: 'Content-Type must be application/json',
  rateLimited: 'Rate limit exceeded',
  memory: 'Template compilation exceeded the memory limit',
  internal: 'An unexpected error occurred during document compilation.',
  unavailable: 'Service temporarily unavailable. Please try again later.',
  notFound: 'Not found',
  badRequest: 'Bad request',
  bodyLengthMismatch: 'Request body length does not match Content-Length',
  headersTooLarge: 'Request headers too large (at most 16 KiB)',
  requestTimeout: 'The request was not received in time',
  lengthAndChunked: 'Malformed HTTP request: Content-Length together with Transfer-Encoding',
  invalidLength: 'Malformed HTTP request: Content-Length must be one non-negative whole number',
  twoLengths: 'Malformed HTTP request: more than one Content-Length',
  malformedHttp: 'Malformed HTTP request',
  badUrl: 'Malformed URL',
  lengthRequired: 'An HTTP/1.0 request with a body must declare its Content-Length',
  typstField: `Field "typst" must be one of ${quotedList(ENGINE_IDS)}`,
  pdfField: 'Field "pdf" must be a JSON object with the optional fields "standard", "tagged" and "signature"',
  pdfKey: 'Field "pdf" may hold only "standard", "tagged" and "signature"',
  pdfStandard: `Field "pdf.standard" must be one of ${quotedList(PDF_STANDARDS)}`,
  pdfTagged: 'Field "pdf.tagged" must be true or false',
  pdfNeeds014: 'Field "pdf" needs "typst": "0.14": PDF standards and tagging are options of the Typst 0.14 engine',
  pdfSignature: `Field "pdf.signature" must be a JSON object with the optional fields ${quotedList(SIGNATURE_FIELDS)}`,
  pdfSignatureKey: `Field "pdf.signature" may hold only ${quotedList(SIGNATURE_FIELDS)}`,
  noSigningIdentity: 'This service has no signing identity configured',
  /** A PDF export refusal whose text could not be read (never the binding's raw text). */
  exportFailed: 'the PDF export failed',
} as const;

/** The body checker's refusals of the request's shape (body/json-check.ts), all 400. */
export const BODY_MESSAGES = {
  empty: 'Request body is empty: expected a JSON object with fields "data" and "template"',
  notAnObject: 'Request body must be a JSON object with fields "data" and "template"',
  missingData: 'Missing required field "data": expected a JSON object',
  missingTemplate: 'Missing required field "template": expected a string of Typst markup',
  dataNotObject: 'Field "data" must be a JSON object',
  templateNotString: 'Field "template" must be a string of Typst markup',
  dataLoneSurrogate: 'Field "data" contains an unpaired surrogate escape (\\uD800 to \\uDFFF alone): Typst cannot read it',
  assetsNotObject: 'Field "assets" must be a JSON object mapping file names to base64 contents',
} as const;

/** A `pdf.signature` text that is not a string of at most SIGNATURE_TEXT_CHARS characters. */
export function signatureText(field: SignatureField): string {
  return `Field "pdf.signature.${field}" must be a string of at most ${SIGNATURE_TEXT_CHARS} characters`;
}

export function notUtf8(byte: number): string {
  return `Request body is not valid UTF-8 (byte ${byte})`;
}

/** Where the JSON breaks: line and column from the body's first byte after any byte order mark, and the byte offset. */
export function invalidJson(fault: JsonFault, place: Place, byte: number): string {
  return `Request body is not valid JSON: ${fault} at line ${place.line}, column ${place.column} (byte ${byte})`;
}

/** `unit`: the escape's code unit; `place`: in the template as JSON.parse gives it. */
export function templateLoneSurrogate(unit: number, place: Place): string {
  const hex = unit.toString(16).toUpperCase();
  return `Field "template" contains an unpaired surrogate escape (\\u${hex}) on line ${place.line}, column ${place.column} of the template: Typst text must be valid Unicode`;
}

export function tooManyAssets(maxAssets: number): string {
  return `Field "assets" has more than ${maxAssets} entries`;
}

/**
 * A 400 about one asset, in two parts: the asset's name goes between them,
 * as the client sent it (it is request content, so it stays bytes: see
 * body/error-body.ts). `Asset "<name>": <problem>`, or for an image whose
 * header declares more than MAX_IMAGE_PIXELS, `Asset "<name>" is an image of ...`.
 */
export const ASSET_REFUSAL = {
  beforeName: 'Asset "',
  problem: (problem: string) => `": ${problem}`,
  imageTooLarge: (width: number, height: number, maxPixels: number) =>
    `" is an image of ${width} × ${height} pixels, over the ${maxPixels / 1e6} megapixel limit`,
};

/** Why an asset's name breaks the rules (body/asset-names.ts); the answer names the asset before it. */
export const ASSET_NAME_PROBLEMS = {
  empty: 'name must not be empty',
  absolute: 'name must be a relative path: it must not start with "/"',
  emptySegment: 'name has an empty path segment',
  dotSegment: 'name must not have a "." or ".." path segment',
  character: 'name may only hold the characters A-Z a-z 0-9 . _ - and "/" between path segments',
  /** A name too long to unescape for a closer look, with an escape in it. */
  invalid: 'name is not valid',
} as const;

export function assetNameTooLong(maxLength: number): string {
  return `name is longer than ${maxLength} characters`;
}

/** Why an asset's value is refused (body/base64.ts); the answer names the asset before it. */
export const ASSET_VALUE_PROBLEMS = {
  notBase64DataUrl: 'only base64 data: URLs are accepted (data:<type>;base64,...)',
  notString: 'value must be a string of base64 or a data: URL with ;base64',
} as const;

export function invalidBase64(character: number): string {
  return `not valid base64 (character ${character} of the value)`;
}

/** The warning for a font family no worker has (render/fonts/warnings.ts). */
export const UNKNOWN_FONT = 'unknown font family (not among GET /v1/fonts; Typst uses a fallback font)';

export function timeoutMessage(timeoutMs: number): string {
  const seconds = Math.round((timeoutMs / 1000) * 10) / 10;
  return `Template compilation exceeded the ${seconds} second limit`;
}

/** 422 for a PDF over MAX_PDF_BYTES. */
export function pdfTooLargeMessage(maxPdfBytes: number): string {
  const mb = Math.round((maxPdfBytes / (1024 * 1024)) * 10) / 10;
  return `The PDF exceeds the ${mb} MB output limit`;
}

/** The 400 message for a template that did not compile, with its place in the template as sent. */
export function templateMessage(failure: TemplateFailure): string {
  if (failure.kind === 'data') return `The request's data could not be read by Typst: ${failure.message}`;
  const place = failure.line === null ? '' : ` on line ${failure.line}${failure.column === null ? '' : `, column ${failure.column}`}`;
  const where = failure.file ? ` in ${failure.file}${place}` : place;
  return failure.kind === 'syntax' ? `Invalid Typst syntax${where}: ${failure.message}` : `Typst error${where}: ${failure.message}`;
}

/** 415 for a body sent compressed (or in any encoding): the service reads JSON as it is. */
export function unsupportedEncoding(encoding: string): string {
  return `Content-Encoding "${encoding}" is not supported: send the JSON body uncompressed`;
}

/** Typst's own messages, reworded where they would show a server path or give no clue (render/diagnostics.ts). */
export const DIAGNOSTIC_MESSAGES = {
  none: 'compilation failed without a diagnostic',
} as const;

/**
 * A file the template reads that is not among the assets: named as the
 * template wrote it, with how files reach a template (`exampleAsset`), or,
 * for a URL (`exampleAsset` undefined), that nothing is fetched.
 */
export function fileNotFound(path: string, exampleAsset: string | undefined): string {
  if (exampleAsset === undefined) {
    return `file not found: ${path}; hint: the service fetches nothing from the network: send the file in the request's "assets" field and name it by its asset name`;
  }
  return `file not found: ${path}; hint: a template reads only the files sent in the request's "assets" field, e.g. "assets": {"${exampleAsset}": "<base64>"}`;
}

/** Typst's "at line L column C" for `data`, said of the request body as sent. */
export function dataPlaceInBody(place: Place): string {
  return `at line ${place.line} column ${place.column} of the request body`;
}

export function packageUnavailable(spec: string): string {
  return `package ${spec} is not available: this service does not download packages (an operator can provide them in PACKAGE_PATH)`;
}

const WARNINGS_HEADER_MAX = 2000;

/**
 * `X-Typst-Warnings`: the count, then each warning as `line N, column C: message`,
 * separated by ` | `; characters outside printable ASCII, and the backslash, escaped
 * as \uXXXX; cut to a bounded length.
 */
export function warningsHeader(warnings: Warning[]): string {
  const parts = warnings.map((w) => {
    if (w.line === null) return w.message;
    return `line ${w.line}${w.column == null ? '' : `, column ${w.column}`}: ${w.message}`;
  });
  // A backslash is escaped too, so that `\u` in a header always starts an escape.
  const text = `${warnings.length}; ${parts.join(' | ')}`.replace(
    /[^\x20-\x5b\x5d-\x7e]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return text.length > WARNINGS_HEADER_MAX ? `${text.slice(0, WARNINGS_HEADER_MAX - 3)}...` : text;
}
