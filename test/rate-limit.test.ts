/**
 * Rate limits against a real Redis and real service instances: one budget
 * shared by two instances, the headers on every status, 429's answer,
 * per-key plans, the window boundary, client addresses behind a proxy,
 * counters of keys that other traffic cannot evict, and Redis outages
 * (killed, restarted empty, hanging) that neither stall requests nor hand
 * out a fresh budget.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { RedisServer } from './support/redis.js';
import {
  generate,
  MAIN,
  rateLimitHeaders,
  readiness,
  startService,
  TEST_KEY,
  waitReady,
  type Service,
  logsWritten,
} from './support/service.js';

/** 10^10 loop iterations: runs until the compile limit kills it. */
const RUNAWAY = '#for i in range(100000) { for j in range(100000) { } }';
/** A body the schema refuses (400): counted, but never compiled. */
const NOT_COMPILED = { template: 'x' };

/** Runs `count` calls of `task`, at most `concurrency` at a time, and returns the results in order. */
async function inParallel<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

/** Waits until /readyz says the counters are (or are not) shared through Redis. */
async function waitShared(service: Service, shared: boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const body = await readiness(service);
    if ((body.rateLimit as { shared?: boolean } | undefined)?.shared === shared) return;
    if (Date.now() > deadline) throw new Error(`rate limit not ${shared ? 'shared' : 'local'}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The three rate-limit headers are present and sane. */
function assertHeaders(res: { status: number; headers: Headers }, limit: number, what: string): void {
  const { limit: l, remaining, reset } = rateLimitHeaders(res as Response);
  const now = Date.now() / 1000;
  assert.equal(l, limit, `${what}: X-RateLimit-Limit`);
  assert.ok(Number.isInteger(remaining) && remaining >= 0 && remaining <= limit, `${what}: X-RateLimit-Remaining ${remaining}`);
  assert.ok(Number.isInteger(reset) && reset >= Math.floor(now) && reset <= Math.ceil(now) + 61, `${what}: X-RateLimit-Reset ${reset}`);
}

function countLines(output: string, text: string): number {
  return output.split('\n').filter((line) => line.includes(text)).length;
}

const OUTAGE = 'Redis unreachable, each instance counts on its own';
const SHARING = 'counting in Redis, shared by all instances';

/** A real Redis and two one-worker instances counting in it, once both report sharing. */
async function startSharingPair(env: Record<string, string>): Promise<{ redis: RedisServer; a: Service; b: Service }> {
  const redis = await RedisServer.start();
  const all = { REDIS_URL: redis.url, WORKERS: '1', ...env };
  const [a, b] = await Promise.all([startService(all), startService(all)]);
  await Promise.all([waitShared(a, true), waitShared(b, true)]);
  return { redis, a, b };
}

describe('two instances sharing one Redis', () => {
  let redis: RedisServer;
  let a: Service;
  let b: Service;
  before(async () => {
    ({ redis, a, b } = await startSharingPair({ QUEUE_LIMIT: '16' }));
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('gives 100 requests spread over both exactly 100 successes, then 429 with Retry-After', async () => {
    const results = await inParallel(110, 8, async (i) => {
      const res = await generate(i % 2 === 0 ? a : b, { data: { i }, template: 'Request #data.i' });
      const body = res.status === 200 ? undefined : await res.json();
      if (res.status === 200) await res.arrayBuffer();
      return { status: res.status, headers: res.headers, body };
    });
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    assert.equal(ok.length, 100, `statuses: ${results.map((r) => r.status).join(',')}`);
    assert.equal(limited.length, 10);
    // Each success took its own place in the shared budget: remaining 99 down to 0, each once.
    const remaining = ok.map((r) => rateLimitHeaders(r as unknown as Response).remaining).sort((x, y) => x - y);
    assert.deepEqual(
      remaining,
      Array.from({ length: 100 }, (_, i) => i),
    );
    for (const r of results) assertHeaders(r, 100, `status ${r.status}`);
    for (const r of limited) {
      assert.deepEqual(r.body, { error: 'Rate limit exceeded' });
      assert.equal(rateLimitHeaders(r as unknown as Response).remaining, 0);
      const retryAfter = Number(r.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      // Retry-After and X-RateLimit-Reset name the same moment, give or take the second being rounded.
      const reset = rateLimitHeaders(r as unknown as Response).reset;
      assert.ok(Math.abs(Date.now() / 1000 + retryAfter - reset) <= 2, `Retry-After ${retryAfter}, reset ${reset}`);
    }
    // Both instances answered, and both refused once the shared budget was spent.
    await logsWritten();
    assert.equal(countLines(a.output(), '"status":429') > 0 && countLines(b.output(), '"status":429') > 0, true);
  });

  it('health probes are not counted', async () => {
    const res = await fetch(`${a.url}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-ratelimit-remaining'), null);
  });
});

/** Sends a POST with a declared Content-Length and no body; returns the answer's status and headers. */
function declaredTooLarge(service: Service, key: string): Promise<{ status: number; headers: Headers; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/v1/pdf/generate', service.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'content-length': 10 * 1024 * 1024 + 1 },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode!, headers, body });
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

/** Streams a chunked body past 10 MB, so the 413 comes from the body reader; returns status and headers. */
function chunkedTooLarge(service: Service, key: string): Promise<{ status: number; headers: Headers; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/v1/pdf/generate', service.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode!, headers, body });
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    const chunk = Buffer.alloc(256 * 1024, 'a');
    let sent = 0;
    req.write('{"data":{"s":"');
    const pump = () => {
      while (sent < 12 * 1024 * 1024) {
        if (req.destroyed) return;
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end('"},"template":"x"}');
    };
    pump();
  });
}

describe('headers on every status', () => {
  let redis: RedisServer;
  let service: Service;
  const PLAN_KEY = 'plan-key-with-three-per-window';
  before(async () => {
    redis = await RedisServer.start();
    service = await startService({
      REDIS_URL: redis.url,
      WORKERS: '1',
      QUEUE_LIMIT: '0',
      COMPILE_TIMEOUT_MS: '1500',
      RATE_LIMIT_PER_MINUTE: '1000',
      API_KEYS: `${TEST_KEY},${PLAN_KEY} name=small limit=3`,
    });
    await waitShared(service, true);
  });
  after(async () => {
    await service?.stop();
    await redis?.stop();
  });

  it('200, 400, 401, 404, 413 (declared and read), 415', async () => {
    const ok = await generate(service, { data: {}, template: 'fine' });
    assert.equal(ok.status, 200);
    assertHeaders(ok, 1000, '200');
    const syntax = await generate(service, { data: {}, template: '#(' });
    assert.equal(syntax.status, 400);
    assertHeaders(syntax, 1000, '400 syntax');
    const schema = await generate(service, NOT_COMPILED);
    assert.equal(schema.status, 400);
    assertHeaders(schema, 1000, '400 schema');
    const unauthorized = await generate(service, { data: {}, template: 'x' }, { key: null });
    assert.equal(unauthorized.status, 401);
    assertHeaders(unauthorized, 1000, '401');
    const notFound = await fetch(`${service.url}/v1/unknown`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(notFound.status, 404);
    assertHeaders(notFound, 1000, '404');
    const declared = await declaredTooLarge(service, TEST_KEY);
    assert.equal(declared.status, 413, declared.body);
    assertHeaders(declared, 1000, '413 declared');
    const read = await chunkedTooLarge(service, TEST_KEY);
    assert.equal(read.status, 413, read.body);
    assertHeaders(read, 1000, '413 read');
    const mediaType = await generate(service, 'x', { headers: { 'content-type': 'text/plain' } });
    assert.equal(mediaType.status, 415);
    assertHeaders(mediaType, 1000, '415');
  });

  it('422, 500 and 503', async () => {
    const timedOut = await generate(service, { data: {}, template: RUNAWAY });
    assert.equal(timedOut.status, 422);
    assertHeaders(timedOut, 1000, '422');
    await waitReady(service, 1);

    const busy = generate(service, { data: {}, template: RUNAWAY }); // holds the only worker; no queue
    await new Promise((r) => setTimeout(r, 300));
    const unavailable = await generate(service, { data: {}, template: 'x' });
    assert.equal(unavailable.status, 503);
    assert.equal(unavailable.headers.get('retry-after'), '1');
    assertHeaders(unavailable, 1000, '503');
    for (const pid of service.workerPids()) process.kill(pid, 'SIGKILL');
    const crashed = await busy;
    assert.equal(crashed.status, 500);
    assertHeaders(crashed, 1000, '500');
    await waitReady(service, 1);
  });

  it('a key with its own limit gets 429 past it, before its body is read or compiled', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await generate(service, NOT_COMPILED, { key: PLAN_KEY });
      assert.equal(res.status, 400);
      assertHeaders(res, 3, `plan request ${i + 1}`);
      assert.equal(rateLimitHeaders(res).remaining, 2 - i);
    }
    // The body would be a 400 if it were read, a 422 if it were compiled: 429 shows neither happened.
    const limited = await generate(service, { data: {}, template: RUNAWAY }, { key: PLAN_KEY });
    assert.equal(limited.status, 429);
    assertHeaders(limited, 3, '429');
    assert.equal(rateLimitHeaders(limited).remaining, 0);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.deepEqual(await limited.json(), { error: 'Rate limit exceeded' });
    assert.equal((await readiness(service)).busy, 0, 'nothing is compiling');
    // Other keys keep their own budget.
    assert.equal((await generate(service, NOT_COMPILED)).status, 400);
  });
});

describe('the window boundary', () => {
  for (const store of ['memory', 'redis'] as const) {
    it(`counts from zero again once X-RateLimit-Reset has passed (${store})`, async () => {
      const redis = store === 'redis' ? await RedisServer.start() : undefined;
      const service = await startService({
        WORKERS: '1',
        RATE_LIMIT_PER_MINUTE: '3',
        RATE_LIMIT_WINDOW_MS: '1500',
        ...(redis ? { REDIS_URL: redis.url } : {}),
      });
      try {
        if (redis) await waitShared(service, true);
        const answers: Response[] = [];
        for (let i = 0; i < 4; i++) answers.push(await generate(service, NOT_COMPILED));
        assert.deepEqual(
          answers.map((r) => r.status),
          [400, 400, 400, 429],
        );
        assert.deepEqual(
          answers.map((r) => rateLimitHeaders(r).remaining),
          [2, 1, 0, 0],
        );
        const reset = rateLimitHeaders(answers[3]!).reset;
        assert.equal(new Set(answers.map((r) => rateLimitHeaders(r).reset)).size, 1, 'one window, one reset time');
        assert.ok(reset * 1000 - Date.now() <= 2600, 'the window is the configured 1.5 s, rounded up to a second');
        await new Promise((r) => setTimeout(r, Math.max(0, reset * 1000 - Date.now()) + 50));
        const next = await generate(service, NOT_COMPILED);
        assert.equal(next.status, 400);
        assert.equal(rateLimitHeaders(next).remaining, 2);
        assert.ok(rateLimitHeaders(next).reset > reset);
      } finally {
        await service.stop();
        await redis?.stop();
      }
    });
  }
});

describe('client addresses', () => {
  async function remainingFor(service: Service, forwardedFor: string): Promise<number> {
    const res = await generate(service, NOT_COMPILED, { key: null, headers: { 'x-forwarded-for': forwardedFor } });
    assert.equal(res.status, 401);
    return rateLimitHeaders(res).remaining;
  }

  it('ignores X-Forwarded-For unless TRUST_PROXY names the proxy', async () => {
    const direct = await startService({ WORKERS: '1', RATE_LIMIT_PER_MINUTE: '10' });
    const proxied = await startService({ WORKERS: '1', RATE_LIMIT_PER_MINUTE: '10', TRUST_PROXY: '127.0.0.1' });
    try {
      // Without trust, a forged header does not buy a fresh budget: one address, one count.
      assert.deepEqual([await remainingFor(direct, '203.0.113.1'), await remainingFor(direct, '203.0.113.2')], [9, 8]);
      // Behind a trusted proxy, each forwarded client has its own count.
      assert.deepEqual(
        [
          await remainingFor(proxied, '203.0.113.1'),
          await remainingFor(proxied, '203.0.113.2'),
          await remainingFor(proxied, '203.0.113.1'),
        ],
        [9, 9, 8],
      );
      // IPv6 clients are counted per /64 network.
      assert.deepEqual([await remainingFor(proxied, '2001:db8:1:2::1'), await remainingFor(proxied, '2001:db8:1:2:ffff::9')], [9, 8]);
    } finally {
      await Promise.all([direct.stop(), proxied.stop()]);
    }
  });
});

/** Answers `count` requests of TEST_KEY one after the other: statuses and X-RateLimit-Remaining. */
async function answers(service: Service, count = 1): Promise<Array<{ status: number; remaining: number }>> {
  const out = [];
  for (let i = 0; i < count; i++) {
    const res = await generate(service, NOT_COMPILED);
    await res.arrayBuffer();
    out.push({ status: res.status, remaining: rateLimitHeaders(res).remaining });
  }
  return out;
}

describe('Redis outage', () => {
  let redis: RedisServer;
  let a: Service;
  let b: Service;
  before(async () => {
    ({ redis, a, b } = await startSharingPair({ RATE_LIMIT_PER_MINUTE: '10' }));
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('serves on from the counts Redis last gave while it is down, logs it once, and writes the counts back when it returns empty', async () => {
    // Shared: the two instances draw on one budget.
    assert.deepEqual(
      [...(await answers(a)), ...(await answers(b)), ...(await answers(a))].map((r) => r.remaining),
      [9, 8, 7],
    );

    await redis.stop();
    await Promise.all([waitShared(a, false), waitShared(b, false)]);
    // Every request is answered; each instance goes on from the last count Redis gave it, never from zero.
    const downA = await answers(a, 12);
    assert.deepEqual(
      downA.map((r) => r.status),
      [...Array(7).fill(400), ...Array(5).fill(429)],
    );
    assert.deepEqual(
      downA.slice(0, 3).map((r) => r.remaining),
      [6, 5, 4],
    );
    assert.deepEqual(await answers(b), [{ status: 400, remaining: 7 }]);
    const ready = await fetch(`${a.url}/readyz`);
    assert.equal(ready.status, 200, 'an instance without Redis is still ready: the limit fails open');
    assert.deepEqual(((await ready.json()) as { rateLimit: unknown }).rateLimit, { store: 'redis', shared: false });
    await logsWritten();
    for (const service of [a, b]) assert.equal(countLines(service.output(), OUTAGE), 1, service.output());

    await redis.start();
    await Promise.all([waitShared(a, true), waitShared(b, true)]);
    // Shared again: the restarted Redis started empty, but got back what the instances counted, so the budget is still spent.
    assert.deepEqual([...(await answers(b)), ...(await answers(a)), ...(await answers(b))], Array(3).fill({ status: 429, remaining: 0 }));
    await logsWritten();
    for (const service of [a, b]) {
      assert.equal(countLines(service.output(), OUTAGE), 1, 'the outage is logged once');
      assert.equal(countLines(service.output(), SHARING), 2, 'sharing is logged at start and on return');
    }
  });

  it('a key spent on one instance stays spent on another after Redis restarts empty', async () => {
    // A key of its own, spent through instance a alone (b never counted it).
    const key = 'key-spent-before-a-restart';
    const [c, d] = await Promise.all([
      startService({ REDIS_URL: redis.url, WORKERS: '1', RATE_LIMIT_PER_MINUTE: '5', API_KEYS: key }),
      startService({ REDIS_URL: redis.url, WORKERS: '1', RATE_LIMIT_PER_MINUTE: '5', API_KEYS: key }),
    ]);
    try {
      await Promise.all([waitShared(c, true), waitShared(d, true)]);
      const spent = [];
      for (let i = 0; i < 6; i++) spent.push((await generate(c, NOT_COMPILED, { key })).status);
      assert.deepEqual(spent, [400, 400, 400, 400, 400, 429]);

      await redis.stop();
      // Both have seen Redis go (its connection's close): else one may still call Redis up once it is back
      // without having given it its counts, and that is the test's race, not the service's.
      await Promise.all([waitShared(c, false), waitShared(d, false)]);
      await redis.start();
      await Promise.all([waitShared(c, true), waitShared(d, true)]);
      const onD = await generate(d, NOT_COMPILED, { key });
      assert.equal(onD.status, 429, 'the restarted Redis was given the count back');
      assert.equal((await generate(c, NOT_COMPILED, { key })).status, 429);
    } finally {
      await Promise.all([c.stop(), d.stop()]);
    }
  });
});

/** Sends a request every `everyMs` for `forMs`, one at a time, and returns each one's status and time taken. */
async function timedAnswers(service: Service, forMs: number, everyMs: number): Promise<Array<{ status: number; ms: number }>> {
  const out = [];
  const end = Date.now() + forMs;
  while (Date.now() < end) {
    const started = performance.now();
    const res = await generate(service, NOT_COMPILED);
    await res.arrayBuffer();
    const ms = performance.now() - started;
    out.push({ status: res.status, ms });
    await new Promise((r) => setTimeout(r, Math.max(0, everyMs - ms)));
  }
  return out;
}

describe('Redis hanging (SIGSTOP)', () => {
  const TIMEOUT_MS = 1000;
  /** An answer slower than this waited on Redis (a local answer takes milliseconds). */
  const STALLED_MS = 400;
  let redis: RedisServer;
  let a: Service;
  let b: Service;
  before(async () => {
    ({ redis, a, b } = await startSharingPair({ RATE_LIMIT_PER_MINUTE: '5', REDIS_TIMEOUT_MS: String(TIMEOUT_MS) }));
  });
  after(async () => {
    redis?.resume();
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('adds what an instance counted during the hang back to the shared count', async () => {
    assert.deepEqual(await answers(a), [{ status: 400, remaining: 4 }]);
    redis.pause();
    // Counted by a alone, on from the shared count.
    assert.deepEqual(
      (await answers(a, 2)).map((r) => r.remaining),
      [3, 2],
    );
    await waitShared(a, false);
    redis.resume();
    await waitShared(a, true);
    // b sees a's two requests: at least 1 + 2 + this one counted (the request in flight when Redis stopped may count twice).
    const [onB] = await answers(b);
    assert.equal(onB!.status, 400);
    assert.ok(onB!.remaining <= 1, `remaining ${onB!.remaining}`);
  });

  it('a spent key stays spent while Redis hangs and after, and only the first request of the outage waits for Redis', async () => {
    // Spent, and both instances know it.
    while ((await answers(a))[0]!.status !== 429);
    assert.deepEqual(await answers(b), [{ status: 429, remaining: 0 }]);

    redis.pause();
    const [onA, onB] = await Promise.all([timedAnswers(a, 3000, 100), timedAnswers(b, 3000, 100)]);
    for (const [name, timed] of [
      ['a', onA],
      ['b', onB],
    ] as const) {
      assert.deepEqual(new Set(timed.map((r) => r.status)), new Set([429]), `${name}: no request served beyond the budget`);
      const stalled = timed.filter((r) => r.ms >= STALLED_MS);
      assert.ok(
        stalled.length <= 1,
        `${name}: ${stalled.length} of ${timed.length} requests waited: ${timed.map((r) => Math.round(r.ms))}`,
      );
      assert.ok(Math.max(...timed.map((r) => r.ms)) < TIMEOUT_MS + 1000, `${name}: no request waits much past REDIS_TIMEOUT_MS`);
    }
    const ready = (await readiness(a)).rateLimit;
    assert.deepEqual(ready, { store: 'redis', shared: false });

    redis.resume();
    await Promise.all([waitShared(a, true), waitShared(b, true)]);
    assert.deepEqual([...(await answers(a)), ...(await answers(b))], Array(2).fill({ status: 429, remaining: 0 }));
  });

  it('logs the outage once when Redis hangs from the start, and its end once Redis answers', async () => {
    redis.pause();
    const c = await startService({ REDIS_URL: redis.url, WORKERS: '1', REDIS_TIMEOUT_MS: String(TIMEOUT_MS) });
    try {
      for (let i = 0; countLines(c.output(), OUTAGE) === 0; i++) {
        assert.ok(i < 100, `no outage line: ${c.output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual((await readiness(c)).rateLimit, { store: 'redis', shared: false });
      assert.equal((await answers(c))[0]!.status, 400, 'served, counted alone');
      redis.resume();
      await waitShared(c, true);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(countLines(c.output(), OUTAGE), 1);
      assert.equal(countLines(c.output(), SHARING), 1);
    } finally {
      redis.resume();
      await c.stop();
    }
  });
});

/** GET /v1/fonts without a key over a connection from `localAddress`; resolves to the status. */
function keylessFrom(
  service: Service,
  options: { localAddress?: string; agent?: Agent; headers?: Record<string, string> },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/v1/fonts', service.url), {
      localAddress: options.localAddress,
      agent: options.agent ?? false,
      headers: options.headers,
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('counters of keys are never evicted by other traffic', () => {
  const LIMIT = 5;
  const CLIENTS = 10_000;

  async function spend(service: Service): Promise<void> {
    assert.deepEqual(
      (await answers(service, LIMIT + 1)).map((r) => r.status),
      [...Array(LIMIT).fill(400), 429],
    );
  }

  it('a spent key stays spent after 10,000 keyless clients from distinct loopback addresses', async () => {
    // A ten-minute window: however slow the machine, the key's window does not end during the test.
    const service = await startService({ WORKERS: '1', RATE_LIMIT_PER_MINUTE: String(LIMIT), RATE_LIMIT_WINDOW_MS: '600000' });
    try {
      await spend(service);
      // 127.1.0.0 to 127.1.39.15: each a loopback address of its own.
      const statuses = await inParallel(CLIENTS, 32, (i) => keylessFrom(service, { localAddress: `127.1.${i >> 8}.${i & 255}` }));
      assert.deepEqual(new Set(statuses), new Set([401]), 'each client has a budget of its own');
      assert.deepEqual(await answers(service), [{ status: 429, remaining: 0 }]);
    } finally {
      await service.stop();
    }
  });

  it('a spent key stays spent after one connection sent 10,000 forwarded addresses (TRUST_PROXY=true)', async () => {
    const service = await startService({
      WORKERS: '1',
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      RATE_LIMIT_WINDOW_MS: '600000',
      TRUST_PROXY: 'true',
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await spend(service);
      const statuses = await inParallel(CLIENTS, 16, (i) =>
        keylessFrom(service, { agent, headers: { 'x-forwarded-for': `198.18.${i >> 8}.${i & 255}` } }),
      );
      assert.deepEqual(new Set(statuses), new Set([401]));
      assert.deepEqual(await answers(service), [{ status: 429, remaining: 0 }]);
    } finally {
      agent.destroy();
      await service.stop();
    }
  });
});

describe('rate-limit settings', () => {
  it('refuses bad values at start, naming the variable and not echoing a Redis URL', () => {
    for (const [name, value] of [
      ['RATE_LIMIT_PER_MINUTE', '0'],
      ['RATE_LIMIT_WINDOW_MS', 'soon'],
      ['REDIS_URL', 'http://user:secret@example'],
      // Only the URL parser refuses the port.
      ['REDIS_URL', 'redis://:secret@127.0.0.1:99999'],
      ['TRUST_PROXY', '10.0.0.0/99'],
    ] as const) {
      const run = spawnSync(process.execPath, [MAIN], {
        env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', API_KEYS: 'k', [name]: value },
        encoding: 'utf8',
        // A service that starts after all is killed at the timeout, not asked to shut down (it would keep the test waiting).
        killSignal: 'SIGKILL',
        timeout: 15_000,
      });
      assert.equal(run.status, 1, `${name}=${value}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, new RegExp(name));
      assert.ok(!run.stderr.includes('secret'));
    }
  });
});
