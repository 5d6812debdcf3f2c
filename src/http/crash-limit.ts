/**
 * The crash limit: a key whose requests crash the engine (the worker dies
 * during the compile, a 500) more than CRASHES_PER_MINUTE times in its
 * rate-limit window gets 429 for the rest of that window, so that one key
 * cannot keep the pool restarting workers.
 *
 * Counted in this instance's memory, not in Redis: what it protects is this
 * instance's pool (each crash costs one of its workers and a restart), and a
 * key's crashes elsewhere cost this pool nothing. It needs no round trip on
 * the path of a crash. Keys are a configured, finite set, and an entry is
 * dropped once its window has ended, so the table needs no other bound.
 * The window is the key's rate-limit window (the same end, `X-RateLimit-Reset`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { MESSAGES } from '../messages.js';
import { HttpError } from './errors.js';

interface Crashes {
  count: number;
  /** Date.now() at which the window the crashes were counted in ends. */
  endsAt: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when the crash limit refused the request (for metrics, apart from the rate limit's 429s). */
    crashLimited?: boolean;
  }
}

export class CrashLimit {
  private readonly keys = new Map<string, Crashes>();

  constructor(private readonly limit: number) {}

  /** Counts a crash of a job of the request's key, in the key's current window. */
  count(request: FastifyRequest): void {
    const bucket = request.apiKey?.bucket;
    const usage = request.rateLimitUsage;
    if (!bucket || !usage) return;
    const entry = this.keys.get(bucket);
    if (entry && entry.endsAt > Date.now()) entry.count++;
    else this.keys.set(bucket, { count: 1, endsAt: usage.endsAt });
  }

  /** Milliseconds the key of `bucket` is still refused for (0: not refused). */
  private refusedFor(bucket: string, now = Date.now()): number {
    const entry = this.keys.get(bucket);
    if (!entry) return 0;
    if (entry.endsAt <= now) {
      this.keys.delete(bucket);
      return 0;
    }
    return entry.count > this.limit ? entry.endsAt - now : 0;
  }

  /** onRequest of the generate route, after the key is known: 429 while the key is refused. */
  refuse = async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const bucket = request.apiKey?.bucket;
    const ms = bucket ? this.refusedFor(bucket) : 0;
    if (ms === 0) return;
    request.crashLimited = true;
    throw new HttpError(429, MESSAGES.crashLimited, { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) });
  };
}
