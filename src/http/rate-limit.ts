/**
 * The rate limit of every request under /v1: a fixed window per API key
 * (RATE_LIMIT_PER_MINUTE, or the key's own `limit=`), and per client address
 * for requests without a valid key, so that 401s are counted and answered
 * with the same headers. Where the counts live, and what happens when Redis
 * fails, is rate-limit-counter.ts.
 *
 * The request is counted in an onRequest hook, right after its key is
 * identified (auth.ts) and before anything else is checked or read (the
 * order is in app.ts); past the limit it is answered 429 at once. The
 * headers are set in onSend, so every answer carries them, whichever part
 * of the service made it (auth, body reader, error handler, not-found).
 */
import type { FastifyInstance } from 'fastify';
import { API_PATH, requestKey } from './auth.js';
import { clientBucket } from './client-address.js';
import { MESSAGES } from '../messages.js';
import { HttpError } from './errors.js';
import type { KeyStore } from './keys.js';
import { RateLimitCounter, type RateLimitHealth, type Subject } from './rate-limit-counter.js';

export interface RateLimitOptions {
  keys: KeyStore;
  /** Requests per window for keys without their own limit and for client addresses. */
  limit: number;
  windowMs: number;
  /** Client addresses whose counts are kept at once (RATE_LIMIT_ADDRESSES); keys' counts are never dropped. */
  maxAddresses: number;
  /** Redis shared by all instances; unset: counters in this process. */
  redisUrl?: string;
  /** Longest wait for Redis before this instance counts on its own (REDIS_TIMEOUT_MS). */
  redisTimeoutMs: number;
}

interface RateLimitUsage {
  limit: number;
  remaining: number;
  /** UNIX time, in seconds, at which the window ends (rounded up, as X-RateLimit-Reset gives it). */
  resetAt: number;
  /** Date.now() at which the window ends. */
  endsAt: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's place in its rate-limit window, set before any other hook answers. */
    rateLimitUsage?: RateLimitUsage;
  }
}

/** Adds the rate-limit hooks to `app` and returns the state of the counters' store, for /readyz. */
export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<() => RateLimitHealth> {
  const counter = await RateLimitCounter.create(app, options);

  app.addHook('onRequest', async (request) => {
    if (!API_PATH.test(request.url)) return;
    const key = requestKey(request, options.keys);
    const subject: Subject = key
      ? { kind: 'key', bucket: key.bucket, limit: key.limit ?? options.limit }
      : { kind: 'address', bucket: `addr:${clientBucket(request.ip)}`, limit: options.limit };
    const count = await counter.count(subject);
    const endsAt = Date.now() + count.ttlMs;
    request.rateLimitUsage = { limit: subject.limit, remaining: count.remaining, resetAt: Math.ceil(endsAt / 1000), endsAt };
    if (count.exceeded) {
      throw new HttpError(429, MESSAGES.rateLimited, { 'retry-after': String(Math.max(1, Math.ceil(count.ttlMs / 1000))) });
    }
  });

  app.addHook('onSend', async (request, reply) => {
    const usage = request.rateLimitUsage;
    if (!usage) return;
    reply.header('x-ratelimit-limit', String(usage.limit));
    reply.header('x-ratelimit-remaining', String(usage.remaining));
    reply.header('x-ratelimit-reset', String(usage.resetAt));
  });

  return () => counter.health();
}
