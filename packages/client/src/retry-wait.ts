/**
 * How long to wait before retrying a 429 or 503, from the answer's headers:
 * Retry-After (seconds or an HTTP date), else X-RateLimit-Reset (UNIX seconds
 * at which the rate-limit window ends), else one second.
 */

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

const DEFAULT_WAIT_MS = 1000;

export function retryWaitMs(headers: Headers, now: number = Date.now()): number {
  const retryAfter = headers.get('retry-after');
  if (retryAfter !== null && retryAfter.trim() !== '') {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  const reset = Number(headers.get('x-ratelimit-reset') ?? NaN);
  if (Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1000 - now);
  return DEFAULT_WAIT_MS;
}
