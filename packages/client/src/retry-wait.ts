/**
 * How long to wait before retrying a 429 or 503, from the answer's headers:
 * Retry-After (seconds or an HTTP date), else X-RateLimit-Reset (UNIX seconds
 * at which the rate-limit window ends) while it is still ahead, else one
 * second. The service sends Retry-After on every 429 and 503 (one second when
 * it is busy), so the last two cover answers from something in front of it,
 * and a reset that the local clock already sees as past (the window just
 * ended, or the two clocks disagree) never makes a retry without a wait.
 */

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

const DEFAULT_WAIT_MS = 1000;

export function retryWaitMs(headers: Headers, now: number = Date.now()): number {
  const retryAfter = retryAfterMs(headers, now);
  if (retryAfter !== undefined) return Math.ceil(retryAfter);
  const resetAt = Number(headers.get('x-ratelimit-reset') ?? NaN) * 1000;
  if (Number.isFinite(resetAt) && resetAt > now) return resetAt - now;
  return DEFAULT_WAIT_MS;
}

/** Retry-After in milliseconds from `now`: its seconds, or the time to its HTTP date (0 once past); undefined without one. */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | undefined {
  const retryAfter = headers.get('retry-after');
  if (retryAfter === null || retryAfter.trim() === '') return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(retryAfter);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}
