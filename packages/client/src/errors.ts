/**
 * The error the client throws when the service does not answer with a PDF.
 */
import { retryAfterMs } from './retry-wait.js';

export class TypstPdfError extends Error {
  override readonly name = 'TypstPdfError';

  constructor(
    /** HTTP status of the answer (400, 401, 413, 422, 429, 500, 503, ...); 0 when no answer arrived. */
    readonly status: number,
    /** The service's message (the `error` field of its JSON body), or a description of what failed. */
    message: string,
    /** Seconds the service asked to wait before trying again (Retry-After, in seconds or as a date), when it said so. */
    readonly retryAfterSeconds?: number,
    /** The service's X-Request-Id for this answer, to quote when reporting a problem. */
    readonly requestId?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Builds the error for a non-2xx answer from its JSON body `{ "error": "..." }`, or from the status line. */
export async function errorFromResponse(response: Response): Promise<TypstPdfError> {
  const text = await response.text().catch(() => '');
  let message = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string' && body.error !== '') message = body.error;
  } catch {
    // Not JSON (for example a proxy's HTML page): keep the status line.
  }
  const retryAfter = retryAfterMs(response.headers);
  return new TypstPdfError(
    response.status,
    message,
    retryAfter === undefined ? undefined : Math.ceil(retryAfter) / 1000,
    response.headers.get('x-request-id') ?? undefined,
  );
}
