/**
 * Sends the editors' content to POST /v1/pdf/generate as the user types:
 * debounced, one request at a time, and polite when the service says wait.
 *
 * - Edits within `debounceMs` of each other make one request.
 * - At most one request is in flight. Edits made meanwhile are sent, once,
 *   when it returns, so answers arrive in the order the requests were made
 *   and an older answer can never replace a newer one. An error answer to a
 *   request that is already out of date is not shown (the next answer will
 *   say whether the newer text still has it); a PDF always is, as it is
 *   newer than the one on screen.
 * - On 429 (and 503) nothing is sent until the time the answer names
 *   (Retry-After, else X-RateLimit-Reset, else one second: typst-pdf-client's
 *   retryWaitMs); then the newest text is sent once.
 */
import { errorFromResponse, parseWarnings, RETRYABLE_STATUSES, retryWaitMs } from 'typst-pdf-client';

export interface GenerateBody {
  data: Record<string, unknown>;
  template: string;
  assets?: Record<string, string>;
  typst?: string;
  pdf?: { standard?: string; signature?: Record<string, never> };
}

export interface RateLimit {
  limit: number | null;
  remaining: number;
  /** Epoch milliseconds at which the window resets. */
  resetAt: number;
}

export type Outcome =
  | { kind: 'pdf'; pdf: Uint8Array<ArrayBuffer>; warnings: string[]; ms: number }
  | { kind: 'error'; status: number; message: string; warnings: string[] };

export interface SchedulerHooks {
  /** The request to send, or a reason there is none (no key, data not valid JSON). */
  body(): GenerateBody | { skip: string };
  key(): string;
  onSending(): void;
  onOutcome(outcome: Outcome): void;
  onSkipped(reason: string): void;
  onRateLimit(limit: RateLimit): void;
  /** The service asked to wait until this time (epoch ms); null when the wait is over. */
  onWaiting(until: number | null, status: number): void;
}

/** Reads the rate-limit headers every answer under /v1 carries. */
export function rateLimitOf(response: Response): RateLimit | null {
  const remaining = response.headers.get('x-ratelimit-remaining');
  const reset = response.headers.get('x-ratelimit-reset');
  if (remaining === null || reset === null) return null;
  const limit = response.headers.get('x-ratelimit-limit');
  return { limit: limit === null ? null : Number(limit), remaining: Number(remaining), resetAt: Number(reset) * 1000 };
}

export class CompileScheduler {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inFlight = false;
  /** Edits (or a wait) left a newer request to send. */
  private pending = false;
  private waitUntil = 0;
  private waitTimer: ReturnType<typeof setTimeout> | undefined;
  /** Counts edits, so an answer can tell whether the text changed since its request. */
  private revision = 0;

  constructor(
    private readonly hooks: SchedulerHooks,
    private readonly debounceMs = 300,
  ) {}

  /** Something changed: send after the debounce, or now. */
  schedule(now = false): void {
    this.revision++;
    clearTimeout(this.timer);
    if (now) void this.send();
    else this.timer = setTimeout(() => void this.send(), this.debounceMs);
  }

  private async send(): Promise<void> {
    if (this.inFlight) {
      this.pending = true;
      return;
    }
    if (Date.now() < this.waitUntil) {
      this.pending = true;
      return;
    }
    this.pending = false;
    const body = this.hooks.body();
    if ('skip' in body) {
      this.hooks.onSkipped(body.skip);
      return;
    }
    this.inFlight = true;
    const revision = this.revision;
    this.hooks.onSending();
    try {
      await this.request(body, revision);
    } finally {
      this.inFlight = false;
      if (this.pending && Date.now() >= this.waitUntil) void this.send();
    }
  }

  private async request(body: GenerateBody, revision: number): Promise<void> {
    const started = performance.now();
    let response: Response;
    try {
      response = await fetch('/v1/pdf/generate', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.hooks.key()}` },
        body: JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch {
      this.show({ kind: 'error', status: 0, message: 'Could not reach the service.', warnings: [] }, revision);
      return;
    }
    const limit = rateLimitOf(response);
    if (limit) this.hooks.onRateLimit(limit);
    const warnings = parseWarnings(response.headers.get('x-typst-warnings'));
    if (response.ok) {
      const pdf = new Uint8Array(await response.arrayBuffer());
      this.show({ kind: 'pdf', pdf, warnings, ms: Math.round(performance.now() - started) }, revision);
      return;
    }
    const { message } = await errorFromResponse(response);
    if (RETRYABLE_STATUSES.has(response.status)) {
      this.wait(retryWaitMs(response.headers), response.status);
      return;
    }
    this.show({ kind: 'error', status: response.status, message, warnings }, revision);
  }

  private show(outcome: Outcome, revision: number): void {
    if (outcome.kind === 'error' && revision !== this.revision) return; // the text changed since: the next answer decides
    this.hooks.onOutcome(outcome);
  }

  /** Sends nothing until `ms` from now, then the newest text once. */
  private wait(ms: number, status: number): void {
    this.waitUntil = Date.now() + ms;
    this.pending = true;
    this.hooks.onWaiting(this.waitUntil, status);
    clearTimeout(this.waitTimer);
    this.waitTimer = setTimeout(() => {
      this.hooks.onWaiting(null, status);
      if (this.pending) void this.send();
    }, ms);
  }
}
