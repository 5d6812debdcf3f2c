/**
 * Counts requests per fixed window, with @fastify/rate-limit's stores.
 *
 * Without REDIS_URL the counters live in this process. With it, they live
 * in Redis (the plugin's store: one atomic script per request, keys expiring
 * with their window), so every instance draws on one budget. When Redis
 * cannot answer, requests are still counted, by this instance alone (fail
 * open), until Redis answers again; each change is logged once.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';

export interface Subject {
  /** What is counted: `key:<digest>` or `addr:<client address>`. */
  bucket: string;
  /** Requests allowed per window. */
  limit: number;
}

export interface Count {
  /** Requests still allowed in this window after this one (never negative). */
  remaining: number;
  /** True when this request is over the limit. */
  exceeded: boolean;
  /** Milliseconds until the window ends. */
  ttlMs: number;
}

export interface RateLimitHealth {
  store: 'redis' | 'memory';
  /** True while the counters are shared through Redis; false while this instance counts alone. */
  shared: boolean;
}

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;

/** Redis keys of the counters start with this. */
const NAMESPACE = 'typst-pdf-service:rate-limit:';
/** A Redis command slower than this counts as a failure: the request is counted locally instead. */
const REDIS_COMMAND_TIMEOUT_MS = 500;
/** After a failed command, Redis is left alone this long before it is tried again. */
const REDIS_RETRY_PAUSE_MS = 1000;
/** Distinct counters the in-memory store keeps (least recently used go first). */
const LOCAL_COUNTERS = 10_000;

/** One @fastify/rate-limit limiter, in its own plugin scope so that two stores can live side by side. */
async function limiterIn(
  app: FastifyInstance,
  subjectOf: (request: FastifyRequest) => Subject,
  options: { windowMs: number; redis?: Redis },
): Promise<Limiter> {
  let limiter: Limiter | undefined;
  await app.register(async (scope) => {
    await scope.register(rateLimit, {
      global: false, // no route hooks: the service's own hook decides what is counted and answers
      timeWindow: options.windowMs,
      keyGenerator: (request) => subjectOf(request).bucket,
      max: (request) => subjectOf(request).limit,
      skipOnError: false, // a Redis failure must reach us, to count locally instead
      ...(options.redis ? { redis: options.redis, nameSpace: NAMESPACE } : { cache: LOCAL_COUNTERS }),
    });
    limiter = scope.createRateLimit();
  });
  return limiter!;
}

export class RateLimitCounter {
  private readonly subjects = new WeakMap<FastifyRequest, Subject>();
  private local!: Limiter;
  private shared?: Limiter;
  private redis?: Redis;
  /** Whether Redis is in use right now; undefined until it first answers or fails. */
  private redisUp: boolean | undefined;
  private redisPausedUntil = 0;
  private closing = false;

  private constructor(private readonly log: FastifyBaseLogger) {}

  static async create(app: FastifyInstance, options: { windowMs: number; redisUrl?: string }): Promise<RateLimitCounter> {
    const counter = new RateLimitCounter(app.log);
    const subjectOf = (request: FastifyRequest) => counter.subjects.get(request)!;
    counter.local = await limiterIn(app, subjectOf, { windowMs: options.windowMs });
    if (options.redisUrl) {
      const redis = new Redis(options.redisUrl, {
        enableOfflineQueue: false, // while disconnected, fail at once and count locally
        maxRetriesPerRequest: 0,
        commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
        connectTimeout: 2000,
        retryStrategy: (attempt) => Math.min(attempt * 100, 1000), // keep reconnecting, at most a second apart
      });
      redis.on('ready', () => counter.setRedisUp(true));
      redis.on('error', (error: NodeJS.ErrnoException) => counter.setRedisUp(false, error));
      redis.on('close', () => counter.setRedisUp(false));
      counter.redis = redis;
      counter.shared = await limiterIn(app, subjectOf, { windowMs: options.windowMs, redis });
      app.addHook('onClose', async () => {
        counter.closing = true; // a closed connection is then no outage
        redis.disconnect();
      });
    }
    return counter;
  }

  /** Counts one request of `subject` and returns its count in the current window. */
  async count(request: FastifyRequest, subject: Subject): Promise<Count> {
    this.subjects.set(request, subject);
    if (this.shared && this.redis?.status === 'ready' && Date.now() >= this.redisPausedUntil) {
      try {
        const result = await this.shared(request);
        this.setRedisUp(true);
        return toCount(result);
      } catch (error) {
        this.redisPausedUntil = Date.now() + REDIS_RETRY_PAUSE_MS;
        this.setRedisUp(false, error as Error);
      }
    }
    return toCount(await this.local(request));
  }

  health(): RateLimitHealth {
    return this.redis ? { store: 'redis', shared: this.redisUp === true } : { store: 'memory', shared: false };
  }

  /** Logs each change of state once: not per request, not per reconnection attempt. */
  private setRedisUp(up: boolean, error?: Error): void {
    if (this.redisUp === up || this.closing) return;
    this.redisUp = up;
    if (up) this.log.info('rate limit: counting in Redis, shared by all instances');
    else {
      const reason = (error as NodeJS.ErrnoException | undefined)?.code ?? error?.name ?? 'connection closed';
      this.log.warn({ reason }, 'rate limit: Redis unreachable, each instance counts on its own until it returns');
    }
  }
}

function toCount(result: Awaited<ReturnType<Limiter>>): Count {
  if (result.isAllowed) throw new Error('rate limit: no allow list is configured'); // cannot happen
  // A window always has time left; a store reporting none has just opened a new one.
  const ttlMs = result.ttl > 0 ? result.ttl : result.timeWindow;
  return { remaining: Math.max(0, result.remaining), exceeded: result.isExceeded, ttlMs };
}
