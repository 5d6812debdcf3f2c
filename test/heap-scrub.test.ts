/**
 * Which collection the server's heap scrub runs
 * (src/retention/heap-scrub.ts), in this process, with V8's real
 * collections: once quiet, the whole heap when V8 collected the whole heap
 * since the last scrub, or a request lived through two young collections
 * (V8's or the scrub's own, up to LIVE_AFTER_ANSWER_MS after its answer),
 * the young generation alone otherwise, whichever turn of the event loop
 * Node reports a collection in (it does when the loop next wakes); while a
 * request is in flight, the young generation alone. What a scrub clears
 * is checked from outside by retention.test.ts.
 */
import assert from 'node:assert/strict';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { HeapScrub, LIVE_AFTER_ANSWER_MS } from '../src/retention/heap-scrub.js';
import { collectionKind, v8Collector } from '../src/retention/v8-collections.js';

/** A collector of this test's own: to the scrub, its collections are V8's. */
const v8Collects = v8Collector();

/** The collections reported so far. */
const reported: { kind: number; startTime: number }[] = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    reported.push({ kind: collectionKind(entry) ?? -1, startTime: entry.startTime });
  }
});
observer.observe({ entryTypes: ['gc'] });
after(() => observer.disconnect());

const { NODE_PERFORMANCE_GC_MINOR: YOUNG, NODE_PERFORMANCE_GC_MAJOR: FULL } = constants;
/** A wake of the event loop, in which Node reports the collections so far. */
const reportsDelivered = () => new Promise((resolve) => setTimeout(resolve, 20));
/** The head of a request that names no header: what a request's header names make the scrub do has tests of its own. */
const HEAD_SEEN: string[] = [];
const countBetween = (from: number, to: number, kind: number) =>
  reported.filter((r) => r.startTime >= from && r.startTime <= to && r.kind === kind).length;

/** Allocates, a turn at a time, until V8 has collected its young generation on its own. */
async function youngCollectionOfV8(): Promise<void> {
  const from = performance.now();
  let kept: string[] = [];
  while (countBetween(from, Number.POSITIVE_INFINITY, YOUNG) === 0) {
    for (let i = 0; i < 50_000; i++) kept.push(`request content ${i}`);
    kept = [];
    await reportsDelivered();
  }
}

/** One young collection, of this test's collector (to the scrub, V8's own), reported. */
async function oneYoungCollectionOfV8(): Promise<void> {
  v8Collects({ type: 'minor' });
  await reportsDelivered();
}

/** A request that comes and is answered in one turn, allocating enough for V8 to collect its young generation meanwhile. */
function requestInOneTurn(scrub: HeapScrub): { from: number; to: number } {
  const from = performance.now();
  const request = scrub.requestStarts(HEAD_SEEN);
  let kept: string[] = [];
  for (let i = 0; i < 1_000_000; i++) kept.push(`request content ${i}`);
  kept = [];
  scrub.answered(request);
  return { from, to: performance.now() };
}

/** Runs one scrub: the young and whole-heap collections it made. */
async function scrubOnce(scrub: HeapScrub): Promise<{ young: number; full: number }> {
  const from = performance.now();
  await scrub.collect();
  const to = performance.now();
  await reportsDelivered();
  return { young: countBetween(from, to, YOUNG), full: countBetween(from, to, FULL) };
}

describe('the requests in flight that hold the scrubs back', () => {
  it('are those that came after the last answered one, whenever its answer is reported', () => {
    const scrub = new HeapScrub();
    // A client's next request, read before the last answer's end was reported.
    const first = scrub.requestStarts(HEAD_SEEN);
    const next = scrub.requestStarts(HEAD_SEEN);
    scrub.answered(first);
    assert.equal(scrub.laterInFlight(), true);
    scrub.answered(next);
    assert.equal(scrub.laterInFlight(), false);
    // A client that trickles its body, then another's request answered meanwhile.
    const trickling = scrub.requestStarts(HEAD_SEEN);
    const answered = scrub.requestStarts(HEAD_SEEN);
    scrub.answered(answered);
    assert.equal(scrub.laterInFlight(), false);
    scrub.answered(trickling);
  });
});

describe("the heap scrub's collection once quiet", () => {
  const scrub = new HeapScrub();

  it('is of the young generation alone after a request that lived through one young collection of V8', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    await oneYoungCollectionOfV8();
    scrub.answered(request);
    // One copy within the young generation moves nothing to the old one: no whole heap, which costs the next few
    // hundred requests their optimized code.
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });

  it('is of the whole heap after a request that lived through two young collections of V8', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    await oneYoungCollectionOfV8();
    await oneYoungCollectionOfV8();
    scrub.answered(request);
    const made = await scrubOnce(scrub);
    assert.equal(made.young, 1);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it('is of the whole heap after a young collection of V8 while a request was in flight and one just after its answer', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    await oneYoungCollectionOfV8();
    scrub.answered(request);
    // Within LIVE_AFTER_ANSWER_MS of the answer its strings may still be live.
    v8Collects({ type: 'minor' });
    const made = await scrubOnce(scrub);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it('is of the young generation alone after young collections of V8 well after the answers', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    await oneYoungCollectionOfV8();
    scrub.answered(request);
    await new Promise((resolve) => setTimeout(resolve, 2 * LIVE_AFTER_ANSWER_MS));
    await oneYoungCollectionOfV8();
    await oneYoungCollectionOfV8();
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });

  it('is of the whole heap after young collections in the turn a request was answered, reported after it', async () => {
    await scrubOnce(scrub);
    const { from, to } = requestInOneTurn(scrub);
    const made = await scrubOnce(scrub);
    assert.ok(countBetween(from, to, YOUNG) >= 2, 'V8 collected its young generation twice while the request was answered');
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it("is of the young generation alone after a request that started before Node reported the last scrub's", async () => {
    const request = scrub.requestStarts(HEAD_SEEN);
    await youngCollectionOfV8();
    scrub.answered(request);
    const from = performance.now();
    await scrub.collect();
    // A request that arrives right after a scrub of the whole heap, before Node reports the scrub's collections.
    const arrived = performance.now();
    const arriving = scrub.requestStarts(HEAD_SEEN);
    assert.equal(countBetween(from, arrived, YOUNG), 0, 'the scrub was not reported before the request arrived');
    await reportsDelivered();
    assert.equal(countBetween(from, arrived, YOUNG), 1, 'the scrub was reported while the request was in flight');
    assert.ok(countBetween(from, arrived, FULL) >= 1, 'the scrub collected the whole heap');
    scrub.answered(arriving);
    // Such a scrub once made every scrub after it collect the whole heap: 20 to 70 ms of the server's CPU each.
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });

  it('is of the whole heap after a request that came and went, with young collections, while the scrub waited', async () => {
    // A scrub of its own, whose first request is this one.
    const scrub = new HeapScrub();
    await scrubOnce(scrub);
    const waited = scrub.collect();
    let request: { from: number; to: number } | undefined;
    // Runs in the turn after the scrub began to wait, before the reports of what it does come.
    setImmediate(() => {
      request = requestInOneTurn(scrub);
    });
    await waited;
    const to = performance.now();
    await reportsDelivered();
    assert.ok(request, 'the request came while the scrub waited');
    assert.ok(countBetween(request.from, request.to, YOUNG) >= 2, 'V8 collected its young generation twice during the request');
    assert.ok(countBetween(request.to, to, FULL) >= 1, 'the scrub collected the whole heap');
  });

  it('is of the whole heap after a request that lived through a collection of the whole heap of V8', async () => {
    await scrubOnce(scrub);
    const from = performance.now();
    const request = scrub.requestStarts(HEAD_SEEN);
    v8Collects({ type: 'major' });
    await reportsDelivered();
    scrub.answered(request);
    const to = performance.now();
    assert.deepEqual(
      { young: countBetween(from, to, YOUNG), full: countBetween(from, to, FULL) },
      { young: 0, full: 1 },
      'V8 collected the whole heap, and not its young generation, during the request',
    );
    const made = await scrubOnce(scrub);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it('is of the whole heap after a request that named a header the server had not seen, and not after one naming it again', async () => {
    await scrubOnce(scrub);
    const naming = scrub.requestStarts(['Host', 'localhost', 'X-Named-Here-First', 'v']);
    scrub.answered(naming);
    const made = await scrubOnce(scrub);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
    const namingAgain = scrub.requestStarts(['host', 'localhost', 'x-named-here-first', 'w']);
    scrub.answered(namingAgain);
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });

  it('is of the young generation alone while a request is in flight, and of the whole heap after one that lived through two of those', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 }, 'the first scrub while it is in flight');
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 }, 'the second');
    scrub.answered(request);
    const made = await scrubOnce(scrub);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it('is of the young generation alone after a request that lived through one scrub while in flight', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
    scrub.answered(request);
    // One copy within the young generation moves nothing to the old one: no whole heap (20 to 70 ms) for it.
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });

  it('is of the whole heap once quiet after a collection of V8 that came before a scrub made while a request was in flight', async () => {
    await scrubOnce(scrub);
    const request = scrub.requestStarts(HEAD_SEEN);
    await youngCollectionOfV8();
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 }, 'the scrub while it is in flight');
    scrub.answered(request);
    const made = await scrubOnce(scrub);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it("is of the whole heap after a request whose URL is none of the server's paths", async () => {
    await scrubOnce(scrub);
    scrub.stringsMayOutliveCollections();
    const foreign = scrub.requestStarts(HEAD_SEEN);
    scrub.answered(foreign);
    const made = await scrubOnce(scrub);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
    const own = scrub.requestStarts(HEAD_SEEN);
    scrub.answered(own);
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });
});
