/**
 * A small client for the Typst PDF service, with no dependencies:
 * `generatePdf({ data, template, assets, typst, pdf })` sends one generate
 * request (JSON, or a multipart form with `encoding: "multipart"`) and resolves to the PDF bytes, the Typst version and the service's
 * warnings. Answers 429 (rate
 * limited) and 503 (busy) are retried after the wait the service asks for,
 * within a bounded number of attempts and a bounded total wait; every other
 * failure rejects with a TypstPdfError carrying the status and the service's
 * message. Uses the global fetch of Node 20 or later (or the one given).
 * Nothing here imports a node: module, so it runs in browsers as it is (the
 * playground page bundles it); only cli.ts is for Node.
 */
import { TypstPdfError, errorFromResponse } from './errors.js';
import { RETRYABLE_STATUSES, retryWaitMs } from './retry-wait.js';
import { parseWarnings } from './warnings-header.js';

export { errorFromResponse, TypstPdfError } from './errors.js';
export { RETRYABLE_STATUSES, retryWaitMs } from './retry-wait.js';
export { type TemplatePlace, templatePlace } from './template-place.js';
export { parseWarnings } from './warnings-header.js';

export interface GenerateRequest {
  /** Exposed to the template as the Typst dictionary `data`. */
  data: Record<string, unknown>;
  /** Typst markup. */
  template: string;
  /**
   * Files the template reads by name (`#image("logo.png")`, `#read`, `#csv`, `#include`):
   * bytes, which the client encodes as base64, or a string already in base64 or a
   * `data:<type>;base64,` URL, sent as it is.
   */
  assets?: Record<string, Uint8Array | string>;
  /** The Typst engine: `"0.11"` or `"0.14"` (or the exact version); absent: the service's default. */
  typst?: TypstEngine;
  /** PDF output options: a standard and tagging (Typst 0.14), a signature (either engine). */
  pdf?: PdfOptions;
}

/** The engines the service runs, short or exact. */
export const TYPST_ENGINES = ['0.11', '0.14', '0.11.1', '0.14.2'] as const;
export type TypstEngine = (typeof TYPST_ENGINES)[number];

/** Typst 0.14's PDF standards (`--pdf-standard`). */
export const PDF_STANDARDS = [
  '1.4',
  '1.5',
  '1.6',
  '1.7',
  '2.0',
  'a-1b',
  'a-1a',
  'a-2b',
  'a-2u',
  'a-2a',
  'a-3b',
  'a-3u',
  'a-3a',
  'a-4',
  'a-4f',
  'a-4e',
  'ua-1',
] as const;
export type PdfStandard = (typeof PDF_STANDARDS)[number];

export interface PdfOptions {
  /** A PDF version, PDF/A level or PDF/UA-1, which Typst checks the document against and declares. */
  standard?: PdfStandard;
  /** Write a tagged PDF (the service's default: true). */
  tagged?: boolean;
  /**
   * Sign the PDF by the service's identity (a PAdES signature); a service without
   * one answers 400. The texts are optional, at most 256 characters each.
   */
  signature?: SignatureOptions;
  /** Make a Factur-X / ZUGFeRD e-invoice (Typst 0.14, PDF/A-3). */
  einvoice?: EinvoiceOptions;
}

/** The Factur-X profiles. */
export const EINVOICE_PROFILES = ['MINIMUM', 'BASIC WL', 'BASIC', 'EN 16931', 'EXTENDED', 'XRECHNUNG'] as const;
export type EinvoiceProfile = (typeof EINVOICE_PROFILES)[number];

export interface EinvoiceOptions {
  /** The CII XML: an asset's name, or a file the template attaches with `pdf.attach` (default `factur-x.xml`). */
  xml?: string;
  /** The profile (default: the one the XML declares). */
  profile?: EinvoiceProfile;
}

/** What a reader's PDF viewer shows of a signature. */
export interface SignatureOptions {
  /** Why the document is signed. */
  reason?: string;
  /** Where it is signed. */
  location?: string;
  /** How to reach the signer. */
  contact?: string;
}

export interface GeneratedPdf {
  pdf: Uint8Array;
  /** The exact Typst version that compiled it (`X-Typst-Version`), e.g. "0.14.2". */
  typstVersion: string | undefined;
  /**
   * The service's warnings (`X-Typst-Warnings`), e.g. "line 2, column 17: unknown font family
   * (not among GET /v1/fonts; Typst uses a fallback font)", its `\uXXXX` escapes decoded; empty when there are none.
   */
  warnings: string[];
  /** An e-invoice's business-rule warnings (`X-Einvoice-Warnings`), `ID: text` each; empty when there are none. */
  einvoiceWarnings: string[];
}

export interface RetryInfo {
  /** Status that is being retried (429 or 503). */
  status: number;
  /** The service's message. */
  message: string;
  /** How long the client waits before the next attempt. */
  waitMs: number;
  /** Number of the next attempt (2 for the first retry). */
  attempt: number;
  /** Highest number of attempts. */
  maxAttempts: number;
}

export interface ClientOptions {
  /** Base URL of the service. Default: http://localhost:3000 */
  url?: string;
  /** API key, sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** How many times a 429 or 503 is retried (0 turns retrying off). Default: 2, so at most 3 attempts. */
  retries?: number;
  /** Most time spent waiting between attempts, in total, in milliseconds. Default: 30000. */
  maxRetryWaitMs?: number;
  /** Time limit of each attempt, in milliseconds. Default: 60000. */
  timeoutMs?: number;
  /** Cancels the request and any wait before a retry. */
  signal?: AbortSignal;
  /** Called before each wait for a retry (for example to print a notice). */
  onRetry?: (info: RetryInfo) => void;
  /** fetch implementation to use. Default: the global fetch. */
  fetch?: typeof fetch;
  /**
   * How the request travels: `"json"` (assets as base64) or `"multipart"`, a
   * multipart/form-data form whose template, data and assets are files, their
   * bytes as they are (a third smaller than base64). Default: `"json"`.
   */
  encoding?: 'json' | 'multipart';
}

export const DEFAULT_URL = 'http://localhost:3000';
export const DEFAULT_RETRIES = 2;
export const DEFAULT_MAX_RETRY_WAIT_MS = 30_000;
export const DEFAULT_TIMEOUT_MS = 60_000;
/** The largest body the service takes (its 413 past it). */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Renders `template` with `data` (and `assets`); resolves to the PDF bytes and the warnings.
 * A service URL with credentials in it, or an API key no header can carry, is a TypeError
 * before anything is sent; no message quotes either.
 */
export async function generatePdf(request: GenerateRequest, options: ClientOptions = {}): Promise<GeneratedPdf> {
  const endpoint = endpointOf(options.url ?? DEFAULT_URL);
  const retries = Math.max(0, Math.floor(options.retries ?? DEFAULT_RETRIES));
  const maxAttempts = retries + 1;
  let waitBudgetMs = Math.max(0, options.maxRetryWaitMs ?? DEFAULT_MAX_RETRY_WAIT_MS);
  const doFetch = options.fetch ?? fetch;
  const multipart = options.encoding === 'multipart';
  // A form's Content-Type (with its boundary) is set by fetch from the FormData.
  const headers: Record<string, string> = multipart
    ? { accept: 'application/pdf' }
    : { 'content-type': 'application/json', accept: 'application/pdf' };
  if (options.apiKey) headers.authorization = `Bearer ${sendableKey(options.apiKey)}`;
  const body = multipart
    ? formOf(request)
    : JSON.stringify({
        data: request.data,
        template: request.template,
        assets: encodeAssets(request.assets),
        typst: request.typst,
        pdf: request.pdf,
      });

  for (let attempt = 1; ; attempt++) {
    const signals = [AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)];
    if (options.signal) signals.push(options.signal);
    let response: Response;
    try {
      response = await doFetch(endpoint, { method: 'POST', headers, body, signal: AbortSignal.any(signals) });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new TypstPdfError(0, `Could not reach ${endpoint.origin}: ${describe(error)}`, undefined, undefined, {
        cause: error,
      });
    }
    if (response.ok) return generated(response, endpoint, options.signal);

    const waitMs = retryWaitMs(response.headers);
    const error = await errorFromResponse(response);
    // Give up when the status is not worth retrying, the attempts are used
    // up, or the wait asked for does not fit in what is left of the budget.
    if (!RETRYABLE_STATUSES.has(response.status) || attempt >= maxAttempts || waitMs > waitBudgetMs) throw error;
    waitBudgetMs -= waitMs;
    options.onRetry?.({ status: error.status, message: error.message, waitMs, attempt: attempt + 1, maxAttempts });
    await sleep(waitMs, options.signal);
  }
}

/** The answer's PDF and headers; a body cut off or not a PDF is a TypstPdfError (the former with status 0). */
async function generated(response: Response, endpoint: URL, signal: AbortSignal | undefined): Promise<GeneratedPdf> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  let pdf: Uint8Array;
  try {
    pdf = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const message =
      (error as Error | undefined)?.name === 'TimeoutError'
        ? `The PDF from ${endpoint.origin} did not arrive whole within the time limit`
        : `The answer from ${endpoint.origin} broke off before the whole PDF arrived: ${describe(error)}`;
    throw new TypstPdfError(0, message, undefined, requestId, { cause: error });
  }
  // A proxy's or a login page's 200 is not the service's answer.
  if (!startsWith(pdf, PDF_HEADER)) {
    const type = response.headers.get('content-type')?.split(';')[0]?.trim() || 'none';
    throw new TypstPdfError(response.status, `The answer is not a PDF (Content-Type: ${type})`, undefined, requestId);
  }
  return {
    pdf,
    typstVersion: response.headers.get('x-typst-version') ?? undefined,
    warnings: parseWarnings(response.headers.get('x-typst-warnings')),
    einvoiceWarnings: response.headers.get('x-einvoice-warnings')?.split(' | ') ?? [],
  };
}

/** Every PDF starts with these bytes (ISO 32000-1, 7.5.2). */
const PDF_HEADER = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-

const startsWith = (bytes: Uint8Array, prefix: number[]) => prefix.every((b, i) => bytes[i] === b);

/** The generate endpoint under `url`; a URL with a user name or password is refused without quoting it. */
function endpointOf(url: string): URL {
  let base: URL;
  try {
    base = new URL(withTrailingSlash(url));
  } catch {
    throw new TypeError('The service URL is not a valid URL');
  }
  if (base.username !== '' || base.password !== '') {
    throw new TypeError('The service URL must not hold a user name or password: the API key authenticates');
  }
  return new URL('v1/pdf/generate', base);
}

/**
 * The key without the spaces and line breaks around it (fetch drops them too:
 * a key read from a file ends in one), if a header can carry the rest: no
 * space or control character inside (the service's keys have none), nothing
 * past U+00FF. Otherwise fetch would refuse the header with a message that
 * quotes it (a key file's comment line read along with the key, say).
 */
function sendableKey(key: string): string {
  const around = (c: string | undefined) => c === ' ' || c === '\t' || c === '\r' || c === '\n';
  let start = 0;
  let end = key.length;
  while (start < end && around(key[start])) start++;
  while (end > start && around(key[end - 1])) end--;
  const trimmed = key.slice(start, end);
  if (!/^[\x21-\x7e\xa1-\xff]+$/.test(trimmed)) {
    throw new TypeError(
      'The API key holds a character no HTTP header can carry (a line break, a space or a control character, or one past U+00FF)',
    );
  }
  return trimmed;
}

/** The request as a form: the template and the data as files, each asset a file under its name. */
function formOf(request: GenerateRequest): FormData {
  const form = new FormData();
  form.append('template', new Blob([request.template], { type: 'text/plain' }), 'template.typ');
  form.append('data', new Blob([JSON.stringify(request.data)], { type: 'application/json' }), 'data.json');
  if (request.typst !== undefined) form.append('typst', request.typst);
  if (request.pdf !== undefined) form.append('pdf', JSON.stringify(request.pdf));
  for (const [name, value] of Object.entries(request.assets ?? {})) {
    const bytes = typeof value === 'string' ? fromBase64(value) : value;
    form.append('asset', new Blob([bytes as Uint8Array<ArrayBuffer>]), name);
  }
  return form;
}

/** The bytes of base64 or of a `data:<type>;base64,` URL (an asset given as a string, for a form). */
function fromBase64(text: string): Uint8Array {
  const comma = text.startsWith('data:') ? text.indexOf(',') : -1;
  const binary = atob(text.slice(comma + 1).replace(/\s+/g, ''));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function encodeAssets(assets: GenerateRequest['assets']): Record<string, string> | undefined {
  if (assets === undefined) return undefined;
  return Object.fromEntries(Object.entries(assets).map(([name, value]) => [name, typeof value === 'string' ? value : toBase64(value)]));
}

/** Base64 of `bytes`: Buffer where there is one (Node), else btoa over chunks (browsers). */
function toBase64(bytes: Uint8Array): string {
  const NodeBuffer = (globalThis as { Buffer?: { from(b: Uint8Array): { toString(encoding: 'base64'): string } } }).Buffer;
  if (NodeBuffer) return NodeBuffer.from(bytes).toString('base64');
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function withTrailingSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if (error.name === 'TimeoutError') return 'no answer within the time limit';
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
