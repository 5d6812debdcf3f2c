/**
 * Counts requests per fixed window: in this process, or, with REDIS_URL, in
 * Redis, so that every instance draws on one budget.
 *
 * With Redis, each request is one atomic script (COUNT_SCRIPT) that adds to
 * the counter and returns it with the time left in its window. This instance
 * also remembers each counter's last count (rate-limit-table.ts), so that
 * losing Redis never hands out a fresh budget:
 *
 * - Redis stops answering (down, or hanging): the first command that fails or
 *   takes longer than REDIS_TIMEOUT_MS marks Redis down, and every request
 *   still waiting on it stops waiting. From then on requests are counted
 *   here, on from the counts Redis last gave, without touching Redis: a
 *   request waits on Redis at most once per outage.
 * - A check every REDIS_CHECK_MS (PING) sees Redis answer again; it then
 *   gives Redis, in one pipeline, what was counted here meanwhile (added to
 *   Redis's count), and every count this instance knows as a floor (a
 *   restarted Redis is empty: it gets the counts back, with the time left in
 *   their windows). Only then are requests counted in Redis again.
 * - Every request also sends the count this instance last knew as a floor,
 *   so a Redis that lost its counters between two requests is raised again.
 *
 * A request in flight when Redis stopped answering is counted here, and may
 * be counted by Redis too once it answers: an outage can count a request
 * twice, never hand one out for free.
 *
 * Why no library does this: @fastify/rate-limit's stores and
 * rate-limiter-flexible's insurance limiter both fall back on a separate
 * in-memory counter that starts from zero and never gives Redis what it
 * counted, and neither sends a floor that survives a Redis restart.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Redis, Result } from 'ioredis';
import { CounterTable, type Entry, type SubjectKind } from './rate-limit-table.js';

export interface Subject {
  /** A key's counter, or a client address's (kept apart, see rate-limit-table.ts). */
  kind: SubjectKind;
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

export interface CounterOptions {
  windowMs: number;
  /** Client addresses whose counts are kept at once (keys' counts are kept apart, all of them). */
  maxAddresses: number;
  /** Redis shared by all instances; unset: counters in this process. */
  redisUrl?: string;
  /** A Redis command slower than this marks Redis down. */
  redisTimeoutMs: number;
}

/** Redis keys of the counters start with this. */
const NAMESPACE = 'typst-pdf-service:rate-limit:';
/** While Redis is down, it is checked this often. */
const REDIS_CHECK_MS = 1000;

/**
 * KEYS[1]: the counter. ARGV: requests to add; the window's length (ms); the
 * lowest count to leave (what this instance already knew, plus the
 * requests added); the time left (ms) in the window that count belongs to.
 * Returns the count and the time left in its window.
 */
const COUNT_SCRIPT = `
local current = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  ttl = tonumber(ARGV[4])
  if ttl <= 0 then ttl = tonumber(ARGV[2]) end
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local floor = tonumber(ARGV[3])
if current < floor then
  redis.call('INCRBY', KEYS[1], floor - current)
  current = floor
end
return {current, ttl}
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    rateLimitCount(key: string, add: number, windowMs: number, floor: number, knownTtlMs: number): Result<[number, number], Context>;
  }
}

export class RateLimitCounter {
  private readonly table: CounterTable;
  private redis?: Redis;
  /** True while requests are counted in Redis; false until it first answers and while it is down. */
  private up = false;
  /** The state last logged; undefined until Redis first answers or fails. */
  private logged: boolean | undefined;
  /** Settles when Redis is marked down: requests still waiting on it stop waiting. */
  private outage!: Promise<void>;
  private endOutageWait!: () => void;
  private checking = false;
  private closing = false;

  private constructor(
    private readonly log: FastifyBaseLogger,
    private readonly options: CounterOptions,
  ) {
    this.table = new CounterTable(options.windowMs, options.maxAddresses);
    this.armOutage();
  }

  /** The Redis client is loaded only with a Redis to use (without one, it would be 0.85 MB of the server's heap for nothing). */
  static async create(app: FastifyInstance, options: CounterOptions): Promise<RateLimitCounter> {
    const counter = new RateLimitCounter(app.log, options);
    if (options.redisUrl) counter.connect(app, options.redisUrl, (await import('ioredis')).Redis);
    return counter;
  }

  private connect(app: FastifyInstance, url: string, RedisClient: typeof Redis): void {
    const redis = new RedisClient(url, {
      enableOfflineQueue: false, // while disconnected, a command fails at once instead of waiting
      maxRetriesPerRequest: 0,
      commandTimeout: this.options.redisTimeoutMs, // a Redis that hangs fails a command after this
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000), // keep reconnecting, at most a second apart
    });
    redis.defineCommand('rateLimitCount', { numberOfKeys: 1, lua: COUNT_SCRIPT });
    redis.on('ready', () => void this.check());
    redis.on('error', (error: Error) => this.markDown(error));
    redis.on('close', () => this.markDown());
    const timer = setInterval(() => void this.check(), REDIS_CHECK_MS);
    timer.unref();
    app.addHook('onClose', async () => {
      this.closing = true; // a closed connection is then no outage
      clearInterval(timer);
      redis.disconnect();
    });
    this.redis = redis;
  }

  /** Counts one request of `subject` and returns its count in the current window. */
  async count(subject: Subject): Promise<Count> {
    const now = Date.now();
    const entry = this.table.entry(subject.kind, subject.bucket, now);
    if (this.redis && this.up) {
      const reply = await this.countInRedis(this.redis, subject.bucket, entry, now);
      if (reply) return toCount(reply[0], subject.limit, reply[1], this.options.windowMs);
    }
    entry.count += 1;
    if (this.redis) entry.unsent += 1;
    return toCount(entry.count, subject.limit, entry.endsAt - Date.now(), this.options.windowMs);
  }

  health(): RateLimitHealth {
    return this.redis ? { store: 'redis', shared: this.up } : { store: 'memory', shared: false };
  }

  /** Adds this request and what was counted here before to Redis; undefined if Redis failed or was marked down meanwhile. */
  private async countInRedis(redis: Redis, bucket: string, entry: Entry, sentAt: number): Promise<[number, number] | undefined> {
    const unsent = entry.unsent;
    entry.unsent = 0;
    const known = entry.count > 0;
    const reply = redis.rateLimitCount(
      NAMESPACE + bucket,
      unsent + 1,
      this.options.windowMs,
      known ? entry.count + 1 : 0,
      known ? entry.endsAt - sentAt : 0,
    );
    reply.catch(() => {}); // when the outage wins the race, the command's failure has no one to tell
    try {
      const result = await Promise.race([reply, this.outage]);
      if (result) {
        entry.count = Math.max(entry.count, result[0]);
        entry.endsAt = sentAt + result[1]; // never later than Redis's own end of the window
        return result;
      }
    } catch (error) {
      this.markDown(error as Error);
    }
    entry.unsent += unsent;
    return undefined;
  }

  /** While Redis is down: once it answers a PING and has been given this instance's counts, counts go to Redis again. */
  private async check(): Promise<void> {
    const redis = this.redis;
    if (!redis || this.up || this.checking || this.closing) return;
    if (redis.status !== 'ready') {
      // Never ready since the start (a Redis that takes the connection and does not answer): the outage's line, once.
      if (this.logged === undefined) this.markDown(new Error('no answer'));
      return;
    }
    this.checking = true;
    try {
      await redis.ping();
      await this.writeBack(redis);
      this.markUp();
    } catch (error) {
      this.markDown(error as Error);
    } finally {
      this.checking = false;
    }
  }

  /** Gives Redis what was counted here while it was down, and every count known here as a floor, in one pipeline. */
  private async writeBack(redis: Redis): Promise<void> {
    const now = Date.now();
    const pipeline = redis.pipeline();
    const sent: Array<[Entry, number]> = [];
    for (const [bucket, entry] of this.table.live(now)) {
      pipeline.rateLimitCount(NAMESPACE + bucket, entry.unsent, this.options.windowMs, entry.count, entry.endsAt - now);
      sent.push([entry, entry.unsent]);
      entry.unsent = 0;
    }
    if (sent.length === 0) return;
    let results: Array<[Error | null, unknown]>;
    try {
      results = (await pipeline.exec()) ?? [];
    } catch (error) {
      for (const [entry, unsent] of sent) entry.unsent += unsent;
      throw error;
    }
    let failure: Error | undefined;
    sent.forEach(([entry, unsent], i) => {
      const [error, reply] = results[i] ?? [new Error('no reply'), undefined];
      if (error) {
        entry.unsent += unsent;
        failure = error;
        return;
      }
      const [count, ttlMs] = reply as [number, number];
      entry.count = Math.max(entry.count, count);
      entry.endsAt = now + ttlMs;
    });
    if (failure) throw failure;
  }

  private armOutage(): void {
    this.outage = new Promise((resolve) => {
      this.endOutageWait = resolve;
    });
  }

  private markUp(): void {
    if (!this.up) {
      this.up = true;
      this.armOutage();
    }
    this.logState(true);
  }

  private markDown(error?: Error): void {
    if (this.closing) return;
    if (this.up) {
      this.up = false;
      this.endOutageWait();
    }
    this.logState(false, error);
  }

  /** Logs each change of state once: not per request, not per reconnection attempt. */
  private logState(up: boolean, error?: Error): void {
    if (this.logged === up || this.closing) return;
    this.logged = up;
    if (up) this.log.info('rate limit: counting in Redis, shared by all instances');
    else {
      const reason = (error as NodeJS.ErrnoException | undefined)?.code ?? error?.message ?? 'connection closed';
      this.log.warn(
        { reason },
        'rate limit: Redis unreachable, each instance counts on its own from the counts Redis last gave, until it returns',
      );
    }
  }
}

function toCount(count: number, limit: number, ttlMs: number, windowMs: number): Count {
  // A window always has time left; none means it ends this very millisecond.
  return { remaining: Math.max(0, limit - count), exceeded: count > limit, ttlMs: ttlMs > 0 ? ttlMs : windowMs };
}
