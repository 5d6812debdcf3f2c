/**
 * Which collection the server's heap scrub runs once quiet
 * (src/retention/heap-scrub.ts), in this process, with V8's real
 * collections: the whole heap when a request answered since the last scrub
 * lived through a young collection of V8's own, the young generation alone
 * otherwise. What a scrub clears is checked from outside by
 * retention.test.ts.
 */
import assert from 'node:assert/strict';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { HeapScrub } from '../src/retention/heap-scrub.js';

/** The collections V8 has reported so far (it reports each a turn or more after it). */
const reported: { kind: number; startTime: number }[] = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    reported.push({ kind: (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1, startTime: entry.startTime });
  }
});
observer.observe({ entryTypes: ['gc'] });
after(() => observer.disconnect());

const { NODE_PERFORMANCE_GC_MINOR: YOUNG, NODE_PERFORMANCE_GC_MAJOR: FULL } = constants;
const reportsDelivered = () => new Promise((resolve) => setTimeout(resolve, 20));
const countSince = (from: number, kind: number) => reported.filter((r) => r.startTime >= from && r.kind === kind).length;

/** Allocates until V8 has collected its young generation on its own, as it may while a request waits on a compile. */
async function youngCollectionOfV8(): Promise<void> {
  const from = performance.now();
  let kept: string[] = [];
  while (countSince(from, YOUNG) === 0) {
    for (let i = 0; i < 50_000; i++) kept.push(`request content ${i}`);
    kept = [];
    await reportsDelivered();
  }
}

/** Runs one scrub: the young and full collections it made. */
async function scrubOnce(scrub: HeapScrub): Promise<{ young: number; full: number }> {
  const from = performance.now();
  scrub.collect();
  await reportsDelivered();
  return { young: countSince(from, YOUNG), full: countSince(from, FULL) };
}

describe("the heap scrub's collection once quiet", () => {
  const scrub = new HeapScrub();

  it('is of the whole heap after a request that lived through a young collection of V8', async () => {
    await scrubOnce(scrub);
    const started = scrub.requestStarts();
    await youngCollectionOfV8();
    scrub.answered(started);
    const made = await scrubOnce(scrub);
    assert.equal(made.young, 1);
    assert.ok(made.full >= 1, `the scrub made ${JSON.stringify(made)}`);
  });

  it('is of the young generation alone after a request that started before V8 reported the last scrub', async () => {
    // A scrub of the whole heap, and a request that arrives while it holds the event loop: it starts before V8 has
    // reported the scrub's own young collection, and ends after.
    const started = scrub.requestStarts();
    await youngCollectionOfV8();
    scrub.answered(started);
    const from = performance.now();
    scrub.collect();
    const next = scrub.requestStarts();
    await reportsDelivered();
    scrub.answered(next);
    assert.ok(countSince(from, FULL) >= 1, 'the scrub before the request collected the whole heap');
    // Such scrubs once made every scrub after them collect the whole heap: 20 to 70 ms of the server's CPU each.
    assert.deepEqual(await scrubOnce(scrub), { young: 1, full: 0 });
  });
});
