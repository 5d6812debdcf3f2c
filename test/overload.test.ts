/**
 * Load shedding: a sustained overload of many times the pool's capacity is
 * answered, every request, with 200, 429 or 503 in bounded time; nothing
 * hangs and nothing else comes back. Loopback only, bounded in count and time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generate, rateLimitHeaders, startService, TEST_KEY, waitReady, type Service } from './support/service.js';

/** A few hundred milliseconds of compile: enough that one worker is far slower than the requests arrive. */
const SLOW = '#for i in range(3000) [#i ]';

/** How long the overload lasts, and how many clients keep a request in flight throughout. */
const OVERLOAD_MS = 6_000;
const CONCURRENCY = 24;
/** Every fourth request uses a key on a small plan, which runs out during the run. */
const SMALL_PLAN_KEY = 'small-plan-key-0123456789';
/** No answer may take longer than the queue wait plus one compile, with room for a busy machine. */
const ANSWER_BOUND_MS = 15_000;

describe('sustained overload', () => {
  let service: Service;
  before(async () => {
    service = await startService({
      WORKERS: '1',
      // Eight waiting compiles take longer than the wait allows: both bounds of the queue are reached.
      QUEUE_LIMIT: '8',
      QUEUE_TIMEOUT_MS: '300',
      COMPILE_TIMEOUT_MS: '5000',
      RATE_LIMIT_PER_MINUTE: '100000',
      API_KEYS: `${TEST_KEY},${SMALL_PLAN_KEY} limit=20`,
    });
  });
  after(async () => {
    await service.stop();
  });

  it('answers every request with 200, 429 or 503, none hanging', async () => {
    const statuses: (number | string)[] = [];
    const slowest: number[] = [];
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() - started < OVERLOAD_MS) {
          const i = next++;
          const sent = Date.now();
          try {
            const key = i % 4 === 3 ? SMALL_PLAN_KEY : TEST_KEY;
            const res = await Promise.race([
              generate(service, { data: { i }, template: SLOW }, { key }),
              new Promise<never>((_, reject) => setTimeout(() => reject(new Error('hung')), ANSWER_BOUND_MS).unref()),
            ]);
            await res.arrayBuffer();
            assert.ok(res.headers.get('x-ratelimit-remaining') !== null, `status ${res.status} has no rate-limit headers`);
            assert.ok(rateLimitHeaders(res).remaining >= 0);
            if (res.status === 503 || res.status === 429) assert.ok(Number(res.headers.get('retry-after')) >= 1);
            statuses.push(res.status);
          } catch (error) {
            statuses.push((error as Error).message);
          }
          slowest.push(Date.now() - sent);
        }
      }),
    );
    const elapsed = Date.now() - started;
    const tally: Record<string, number> = {};
    for (const s of statuses) tally[String(s)] = (tally[String(s)] ?? 0) + 1;
    assert.equal(statuses.length, next);
    assert.deepEqual(
      Object.keys(tally).filter((s) => !['200', '429', '503'].includes(s)),
      [],
      `statuses: ${JSON.stringify(tally)}`,
    );
    // The overload was real: some were served, some shed by the queue, some refused by the rate limit.
    assert.ok(tally['200']! > 0 && tally['503']! > 0 && tally['429']! > 0, JSON.stringify(tally));
    assert.equal(tally['429'], Math.floor(next / 4) - 20, 'only the small plan ran out, after its 20 requests');
    assert.ok(Math.max(...slowest) < ANSWER_BOUND_MS, `slowest answer ${Math.max(...slowest)} ms`);
    assert.ok(elapsed < OVERLOAD_MS + ANSWER_BOUND_MS, `overload run took ${elapsed} ms`);
    console.log(`# ${next} requests in ${elapsed} ms: ${JSON.stringify(tally)}, slowest answer ${Math.max(...slowest)} ms`);
    // Afterwards the service is as before.
    await waitReady(service, 1);
    const stats = (await (await fetch(`${service.url}/readyz`)).json()) as { queued: number; busy: number };
    assert.equal(stats.queued, 0);
    assert.equal(stats.busy, 0);
  });
});
