/**
 * Every message the API answers with, in one table, and the few that are
 * built from a value (a time limit, a template's place, an asset's name).
 * Bodies are always `{"error": "<message>"}`, made by bytes/error-body.ts.
 * None shows a server path, and none is ever logged: messages about a
 * template or an asset quote it.
 *
 * An error reaches the client by one of three routes, all worded here:
 *   thrown        an HttpError or a pool error, answered by http/errors.ts
 *                 (and Node's own refusals, by http/client-errors.ts);
 *   body checker  a problem found in the request's bytes (src/bytes/, src/request/), made
 *                 into an answer as bytes, since it may quote the body
 *                 (bytes/error-body.ts);
 *   worker        a template that failed, a PDF over its limit: the worker
 *                 makes the answer's bytes itself (render/job-run.ts).
 *
 * Pure data and functions, so both the server and the workers use it.
 */
import {
  MAX_BODY_BYTES,
  EINVOICE_PROFILES,
  EINVOICE_STANDARDS,
  FACTURX_XSD_VERSION,
  type EinvoiceProfile,
  type TemplateFailure,
  type Warning,
  type Place,
  PDF_STANDARDS,
  SIGNATURE_FIELDS,
  SIGNATURE_TEXT_CHARS,
  type SignatureField,
} from './api-values.js';
import { ENGINE_IDS } from './engines.js';

const quotedList = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

/** A request with two of a header that holds one value (client-errors.ts). */
export const twoHeaders = (name: string) => `Malformed HTTP request: more than one ${name} header`;

export const MESSAGES = {
  unauthorized: 'Missing or invalid API Key',
  tooLarge: `Payload exceeds ${MAX_BODY_BYTES / (1024 * 1024)}MB limit`,
  unsupportedMediaType: 'Content-Type must be application/json or multipart/form-data',
  badContentTypeParameters:
    'Content-Type parameters are malformed: each is ;name=value, the value a token or a quoted string (escaping only " and \\), and no name twice',
  jsonNotUtf8: 'Content-Type application/json must be UTF-8: a charset other than utf-8 is not taken',
  rateLimited: 'Rate limit exceeded',
  crashLimited: 'Templates from this key crashed the engine too often; wait for the next window',
  memory: 'Template compilation exceeded the memory limit',
  internal: 'An unexpected error occurred during document compilation.',
  unavailable: 'Service temporarily unavailable. Please try again later.',
  notFound: 'Not found',
  methodNotAllowed: 'Method not allowed: POST /v1/pdf/generate takes a POST',
  badRequest: 'Bad request',
  bodyLengthMismatch: 'Request body length does not match Content-Length',
  headersTooLarge: 'Request headers too large (at most 16 KiB and 1,000 header lines)',
  requestTimeout: 'The request was not received in time',
  lengthAndChunked: 'Malformed HTTP request: Content-Length together with Transfer-Encoding',
  invalidLength: 'Malformed HTTP request: Content-Length must be one non-negative whole number',
  badTransferEncoding: 'Malformed HTTP request: Transfer-Encoding must end with chunked, given once',
  twoLengths: 'Malformed HTTP request: more than one Content-Length',
  malformedHttp: 'Malformed HTTP request',
  badChunks: 'Malformed HTTP request: the chunked body is not framed as HTTP/1.1 says (a chunk size in hexadecimal, then CRLF)',
  missingHost: 'Malformed HTTP request: an HTTP/1.1 request must have a Host header',
  httpVersion: 'HTTP version not supported: this service speaks HTTP/1.1 (and 1.0)',
  connectUnsupported: 'This service does not support the CONNECT method',
  badUrl: 'Malformed URL',
  lengthRequired: 'An HTTP/1.0 request with a body must declare its Content-Length',
  typstField: `Field "typst" must be one of ${quotedList(ENGINE_IDS)}`,
  pdfField: 'Field "pdf" must be a JSON object with the optional fields "standard", "tagged", "einvoice" and "signature"',
  pdfKey: 'Field "pdf" may hold only "standard", "tagged", "einvoice" and "signature"',
  einvoiceField: 'Field "pdf.einvoice" must be a JSON object with the optional fields "xml" and "profile"',
  einvoiceKey: 'Field "pdf.einvoice" may hold only "xml" and "profile"',
  einvoiceProfile: `Field "pdf.einvoice.profile" must be one of ${quotedList(EINVOICE_PROFILES)}`,
  einvoiceXmlNotString: 'Field "pdf.einvoice.xml" must be a string: the name of an asset, or of a file the template attaches',
  einvoiceStandard: `Field "pdf.standard" must be one of ${quotedList(EINVOICE_STANDARDS)} with "pdf.einvoice": a Factur-X invoice is PDF/A-3`,
  pdfStandard: `Field "pdf.standard" must be one of ${quotedList(PDF_STANDARDS)}`,
  pdfTagged: 'Field "pdf.tagged" must be true or false',
  pdfNeeds014: 'Field "pdf" needs "typst": "0.14": PDF standards, tagging and e-invoices are options of the Typst 0.14 engine',
  /** Appended to a 0.11 engine's error when the 0.14 engine compiles the same request (render/job-run.ts). */
  compilesWith014: 'hint: this template compiles with Typst 0.14: send "typst": "0.14"',
  pdfSignature: `Field "pdf.signature" must be a JSON object with the optional fields ${quotedList(SIGNATURE_FIELDS)}`,
  pdfSignatureKey: `Field "pdf.signature" may hold only ${quotedList(SIGNATURE_FIELDS)}`,
  noSigningIdentity: 'This service has no signing identity configured',
  /** A PDF export refusal whose text could not be read (never the binding's raw text). */
  exportFailed: 'the PDF export failed',
} as const;

/** The body checker's refusals of the request's shape (bytes/json-check.ts), all 400. */
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

/** A multipart form's refusals (request/multipart.ts, request/form-check.ts), all 400. */
export const FORM_MESSAGES = {
  missingData: 'Missing required part "data": expected a JSON object in a part named "data", a file (-F data=@data.json) or a field',
  missingTemplate:
    'Missing required part "template": expected the Typst text in a part named "template", a file (-F template=@letter.typ) or a field; a file part of any other name is an asset',
  noBoundary: 'Content-Type multipart/form-data must name its boundary (boundary=...)',
  badBoundary: "The multipart boundary must be 1 to 70 of RFC 2046's characters: letters, digits, '()+_,-./:=? and spaces (not last)",
  noOpeningBoundary: 'Malformed multipart form: the boundary named in Content-Type does not open it',
  unterminated: 'Malformed multipart form: a part is not terminated (the closing boundary is missing)',
  badBoundaryLine:
    'Malformed multipart form: a boundary line must end with CRLF (no blanks before it), or with "--" at the end of the form',
  boundaryInHeaders:
    "Malformed multipart form: a boundary line comes among a part's headers or right after their blank line (an empty part is its headers, a blank line, then CRLF and the boundary)",
  headersTooLong: 'Malformed multipart form: the headers of a part are longer than 16 KiB',
  badHeader: 'Malformed multipart form: a part has a malformed header line',
  tooManyHeaderLines: (lines: number) => `Malformed multipart form: a part has more than ${lines} header lines`,
  repeatedParameter: "Malformed multipart form: a part's Content-Disposition names name, filename or filename* twice",
  noDisposition: 'Malformed multipart form: a part has no Content-Disposition header',
  notFormData: "Malformed multipart form: a part's Content-Disposition must be form-data",
  badDisposition: "Malformed multipart form: a part's Content-Disposition is malformed",
  noName: "Malformed multipart form: a part's Content-Disposition has no name",
  notUtf8FileName: 'Malformed multipart form: a filename* must be in UTF-8',
  tooManyParts: (maxParts: number) => `Multipart form has more than ${maxParts} parts`,
  tooManyAssets: (maxAssets: number) => `Multipart form has more than ${maxAssets} files (assets)`,
  duplicate: (field: string) => `Multipart form has more than one "${field}" part`,
  templateNotUtf8: (byte: number) => `Part "template" is not valid UTF-8 (byte ${byte} of the part)`,
  dataNotUtf8: (byte: number) => `Part "data" is not valid UTF-8 (byte ${byte} of the part)`,
  pdfNotJson: 'Part "pdf" must be a JSON object with the optional fields "standard", "tagged", "einvoice" and "signature"',
} as const;

/** A part of a form the service does not know, in two parts around its name (as error-body.ts quotes an asset's). */
export const FORM_FIELD_REFUSAL = {
  beforeName: 'Form field "',
  afterName: '" is not known: fields are "template", "data", "typst" and "pdf", and every file part is an asset under its file name',
};

/** How JSON text breaks (bytes/json-scanner.ts), as invalidJson and formPartInvalidJson quote it. */
export const JSON_FAULTS = {
  unterminatedString: 'unterminated string',
  controlCharacter: 'control character in string',
  invalidEscape: 'invalid escape',
  invalidNumber: 'invalid number',
  unexpectedEnd: 'unexpected end of input',
  unexpectedCharacter: 'unexpected character',
  trailingData: 'unexpected data after the JSON value',
} as const;
export type JsonFault = (typeof JSON_FAULTS)[keyof typeof JSON_FAULTS];

/** Part "data" or "pdf" that is not valid JSON. */
export function formPartInvalidJson(part: 'data' | 'pdf', fault: JsonFault, place: Place): string {
  return `Part "${part}" is not valid JSON: ${fault} at line ${place.line}, column ${place.column}`;
}

/** A second file under one name. */
export const DUPLICATE_ASSET = 'more than one file under this name';

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
 * bytes/error-body.ts). `Asset "<name>": <problem>`, or for an image whose
 * header declares more than MAX_IMAGE_PIXELS, `Asset "<name>" is an image of ...`.
 */
export const ASSET_REFUSAL = {
  beforeName: 'Asset "',
  problem: (problem: string) => `": ${problem}`,
  imageTooLarge: (width: number, height: number, maxPixels: number) =>
    `" is an image of ${width} × ${height} pixels, over the ${maxPixels / 1e6} megapixel limit`,
};

/** Why an asset's name breaks the rules (bytes/asset-names.ts); the answer names the asset before it. */
export const ASSET_NAME_PROBLEMS = {
  empty: 'name must not be empty',
  absolute: 'name must be a relative path: it must not start with "/"',
  emptySegment: 'name has an empty path segment',
  dotSegment: 'name must not have a "." or ".." path segment',
  backslash: 'name must not hold a backslash: path segments are joined by "/"',
  control: 'name must not hold control characters',
  notUtf8: 'name is not valid UTF-8',
  reserved: 'name must not start with "~" (kept for the service\'s own files)',
  /** A name too long to unescape for a closer look, with an escape in it. */
  invalid: 'name is not valid',
} as const;

export function assetNameTooLong(maxLength: number): string {
  return `name is longer than ${maxLength} bytes of UTF-8`;
}

/** Why an asset's value is refused (bytes/base64.ts); the answer names the asset before it. */
export const ASSET_VALUE_PROBLEMS = {
  notBase64DataUrl: 'only base64 data: URLs are accepted (data:<type>;base64,...)',
  notString: 'value must be a string of base64 or a data: URL with ;base64',
} as const;

export function invalidBase64(character: number): string {
  return `not valid base64 (character ${character} of the value)`;
}

/** The warning for a font family no worker has (render/fonts/warnings.ts). */
export const UNKNOWN_FONT = 'unknown font family (not among GET /v1/fonts; Typst uses a fallback font)';

/** The warning for a template that is one word ending in ".typ" (render/path-template.ts). */
export const TEMPLATE_IS_A_PATH =
  'the template is one word ending in ".typ" and was compiled as that text: send the file\'s contents instead (with curl, -F template=@file.typ)';

export function timeoutMessage(timeoutMs: number): string {
  const seconds = Math.round((timeoutMs / 1000) * 10) / 10;
  return `Template compilation exceeded the ${seconds} second limit`;
}

/** 408 for a body with no byte for BODY_TIMEOUT_MS. */
export function bodyTimeoutMessage(timeoutMs: number): string {
  const seconds = Math.round((timeoutMs / 1000) * 10) / 10;
  return `Request body not received within ${seconds} seconds`;
}

/** 422 for a PDF over MAX_PDF_BYTES. */
/** Text the engines crash on (bytes/text-runs.ts), in the template or in a string of `data`: 422 before any compile. */
export function textRefusedMessage(hazard: 'run' | 'marks', where: 'template' | 'data'): string {
  const place = where === 'template' ? 'The template' : 'A string in "data"';
  return hazard === 'run'
    ? `${place} has a run of more than 65,535 bytes of text with no space or line break that Typst cannot typeset (its PDF export crashes on it); break it with a space or a line break`
    : `${place} has a character with more than 32,767 combining marks, which Typst cannot typeset (its text shaping crashes on it)`;
}

/** Why an SVG asset is refused before the compile (render/svg-check.ts); the answer is a Typst error in that asset. */
export const SVG_REFUSAL = {
  tooDeep: (limit: number) =>
    `failed to parse SVG (its elements nest more than ${limit.toLocaleString('en')} levels deep, deeper than Typst reads)`,
  undecodableImage: (typst: string) => `an image inside the SVG cannot be decoded: ${typst}`,
};

export function pdfTooLargeMessage(maxPdfBytes: number): string {
  return `The PDF exceeds the ${sizeText(maxPdfBytes)} output limit`;
}

/** A limit in bytes as its message words it: in MB (of 1,048,576 bytes) from one MB, one decimal at most; in KB below; in bytes below one KB. */
function sizeText(bytes: number): string {
  const oneDecimal = (n: number) => Math.round(n * 10) / 10;
  if (bytes >= 1024 * 1024) return `${oneDecimal(bytes / (1024 * 1024))} MB`;
  if (bytes >= 1024) return `${oneDecimal(bytes / 1024)} KB`;
  return `${bytes} bytes`;
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

/** 501 for a transfer coding other than chunked (a body sent `gzip, chunked`). */
export function unsupportedTransferCoding(coding: string): string {
  return `Transfer-Encoding "${coding}" is not supported: send the body chunked or with a Content-Length, uncompressed`;
}

/** Typst's own messages, reworded where they would show a server path or give no clue (render/diagnostics.ts). */
export const DIAGNOSTIC_MESSAGES = {
  none: 'compilation failed without a diagnostic',
  /** What joins a message to Typst's hints (Typst writes `, hints: `). */
  hints: '; hint: ',
  /** The asset name `fileNotFound` shows when the template's own path gives none. */
  exampleAsset: 'logo.png',
  /** After a message cut at its limit (render/diagnostics.ts). */
  cut: (chars: number) => `… (cut at ${chars.toLocaleString('en')} characters)`,
} as const;

/** A file a package lacks (named from the package's root): read by it, or its entry point. */
export function fileNotFoundInPackage(pkg: string, path: string): string {
  return `file not found in package ${pkg}: ${path}; hint: a package reads only its own files, and the request's assets are not among them`;
}

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

/** `pdf.einvoice.xml` that is no asset name (the rules of asset names). */
export function einvoiceXmlName(problem: string): string {
  return `Field "pdf.einvoice.xml" must be an asset or attachment name: ${problem}`;
}

/**
 * Why an e-invoice was refused (400), made by the worker (src/finish/): each
 * message names the XML, whose name is request content, so it comes in two
 * parts the worker puts the name's bytes between (bytes/error-body.ts).
 */
export const EINVOICE_MESSAGES = {
  noXml: { before: 'The e-invoice XML "', after: '" is neither attached by the template (pdf.attach) nor sent as an asset' },
  malformed: (line: number, message: string) => ({
    before: 'The e-invoice XML "',
    after: `" is not well-formed XML, line ${line}: ${message}`,
  }),
  doctype: (line: number) => ({
    before: 'The e-invoice XML "',
    after: `" has a DOCTYPE declaration on line ${line}: an e-invoice may not have one`,
  }),
  schema: (profile: EinvoiceProfile, line: number, message: string) => ({
    before: 'The e-invoice XML "',
    after: `" is not valid against the Factur-X ${FACTURX_XSD_VERSION} XSD of profile ${profile}, line ${line}: ${message}`,
  }),
  encoding: {
    before: 'The e-invoice XML "',
    after: '" must be UTF-8, and it is UTF-16 or UTF-32, or its XML declaration names another encoding',
  },
  noProfile: {
    before: 'The e-invoice XML "',
    after: '" declares no Factur-X profile (GuidelineSpecifiedDocumentContextParameter/ID): name one in "pdf.einvoice.profile"',
  },
  unknownProfile: {
    before: 'The e-invoice XML "',
    after: `" declares a GuidelineSpecifiedDocumentContextParameter/ID that is none of the Factur-X profiles ${EINVOICE_PROFILES.join(', ')}`,
  },
  profileMismatch: (requested: EinvoiceProfile, declared: EinvoiceProfile) => ({
    before: `Field "pdf.einvoice.profile" is "${requested}" but the e-invoice XML "`,
    after: `" declares "${declared}"`,
  }),
  nameTaken: (fileName: string) => ({
    before: 'The e-invoice XML "',
    after: `" must be the only file named "${fileName}" in the PDF, and the template attaches another file under that name`,
  }),
  rules: (failures: { id: string; text: string }[]) => ({
    before: 'The e-invoice XML "',
    after: `" breaks ${failures.length} business rule${failures.length === 1 ? '' : 's'}: ${failures.map((f) => `${f.id}: ${f.text}`).join('; ')}`,
  }),
} as const;

/** `GET /readyz`: its `status`, and why it answers 503. `GET /healthz` answers `ok`. */
export const HEALTH_MESSAGES = {
  alive: 'ok',
  ready: 'ready',
  unavailable: 'unavailable',
  shuttingDown: 'shutting down',
  noWorker: 'no worker is ready',
  queueFull: 'render queue is full',
} as const;

/** `X-Einvoice-Warnings`: the business rules' warnings, `ID: text` joined by ` | `, in printable ASCII. */
export function einvoiceWarningsHeader(warnings: { id: string; text: string }[]): string {
  return warnings
    .map((w) => `${w.id}: ${w.text}`)
    .join(' | ')
    .replace(/[^\x20-\x7e]/g, '?');
}
