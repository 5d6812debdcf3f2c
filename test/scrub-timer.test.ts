/**
 * When the scrubs after answers run (src/retention/scrub-timer.ts), with
 * real timers: 100 ms after the last answer, never while a later request
 * is in flight but for the read buffers' bound, and on a timer
 * that answers and requests never clear, so that a stream of answers wakes the process at most once per
 * quiet time. The scrubs themselves are checked from outside by
 * retention.test.ts and read-buffer-scrub.test.ts.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { scrubAfterAnswer, setScrubs } from '../src/retention/scrub-timer.js';

// The module's timers, watched through the global functions it calls: each run of its callback, and each timer
// cleared before it ran, with what was set right after (a cleared deadline still wakes Node's event loop, unless an
// earlier one has taken its place).
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const dueAt = new WeakMap<object, number>();
let runs = 0;
let cleared: number | undefined;
const clearedThenLater: string[] = [];
globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms = 0, ...args: unknown[]) => {
  const due = performance.now() + ms;
  if (cleared !== undefined && due > cleared + 1) clearedThenLater.push(`due ${cleared.toFixed(1)}, then ${due.toFixed(1)}`);
  cleared = undefined;
  const timer = realSetTimeout(
    (...inner: unknown[]) => {
      if (callback.name === 'run') runs++;
      callback(...inner);
    },
    ms,
    ...args,
  );
  dueAt.set(timer, due);
  return timer;
}) as typeof setTimeout;
globalThis.clearTimeout = ((timer?: NodeJS.Timeout) => {
  if (timer !== undefined && dueAt.has(timer)) cleared = dueAt.get(timer);
  realClearTimeout(timer);
}) as typeof clearTimeout;
after(() => {
  globalThis.setTimeout = realSetTimeout;
  globalThis.clearTimeout = realClearTimeout;
});

const sleep = (ms: number) => new Promise((resolve) => realSetTimeout(resolve, ms));

interface Record {
  /** A request that came after the last answered one is in flight. */
  laterInFlight: boolean;
  quiet: number[];
  overdue: number[];
}

/** Scrubs that note when they ran (ms since `start`), with a request in flight as the record says. */
function recorded(start: number): Record {
  const record: Record = { laterInFlight: false, quiet: [], overdue: [] };
  setScrubs({
    laterInFlight: () => record.laterInFlight,
    quiet: () => record.quiet.push(performance.now() - start),
    overdue: () => record.overdue.push(performance.now() - start),
  });
  return record;
}

describe('the scrubs after answers', () => {
  it('are not asked for before there are scrubs to run', async () => {
    scrubAfterAnswer();
    await sleep(150);
    assert.equal(runs, 0);
  });

  it('run once, 100 ms after the last answer with none in flight', async () => {
    const start = performance.now();
    const record = recorded(start);
    scrubAfterAnswer();
    await sleep(60);
    scrubAfterAnswer();
    await sleep(250);
    assert.equal(record.quiet.length, 1, `quiet scrubs at ${record.quiet}`);
    assert.ok(record.quiet[0]! >= 155, `ran ${record.quiet[0]} ms after the first answer, 100 ms after the last`);
    assert.deepEqual(record.overdue, []);
  });

  it('wait for a request that came after the answer, the read buffers no longer than 1 s after it', async () => {
    const start = performance.now();
    const record = recorded(start);
    scrubAfterAnswer();
    // A request that comes after the answer, and is in flight when the scrubs are due.
    await sleep(20);
    record.laterInFlight = true;
    await sleep(380);
    assert.deepEqual(record.quiet, [], 'no scrub while a request that came since is in flight');
    assert.deepEqual(record.overdue, []);
    await sleep(1000);
    assert.equal(record.overdue.length, 1, `overdue scrubs at ${record.overdue}`);
    assert.ok(record.overdue[0]! >= 995, `the read buffers' scrub ran ${record.overdue[0]} ms after the answer`);
    assert.deepEqual(record.quiet, []);
    // The request is answered: its answer asks again, and the heap's collection follows.
    record.laterInFlight = false;
    scrubAfterAnswer();
    await sleep(300);
    assert.equal(record.quiet.length, 1);
  });

  it('are not held back by a request that came before the answered one (a long compile, a body trickling in)', async () => {
    const start = performance.now();
    const record = recorded(start);
    // In flight, but no later than the request answered (HeapScrub.laterInFlight).
    record.laterInFlight = false;
    await sleep(20);
    scrubAfterAnswer();
    await sleep(250);
    assert.equal(record.quiet.length, 1, `quiet scrubs at ${record.quiet}`);
    assert.ok(record.quiet[0]! >= 115 && record.quiet[0]! < 200, `ran ${record.quiet[0]} ms after the start, 100 ms after the answer`);
    assert.deepEqual(record.overdue, []);
  });

  it('run 100 ms after the later request is answered, not at the 1 s bound', async () => {
    const start = performance.now();
    const record = recorded(start);
    scrubAfterAnswer();
    await sleep(10);
    record.laterInFlight = true;
    await sleep(290);
    record.laterInFlight = false;
    scrubAfterAnswer();
    await sleep(400);
    assert.equal(record.quiet.length, 1, `quiet scrubs at ${record.quiet}`);
    assert.ok(record.quiet[0]! >= 395 && record.quiet[0]! < 900, `ran ${record.quiet[0]} ms after the first answer`);
    assert.deepEqual(record.overdue, []);
  });

  it('wake the process at most once per 100 ms while answers keep coming', async () => {
    const start = performance.now();
    const record = recorded(start);
    const runsBefore = runs;
    clearedThenLater.length = 0;
    // A client sending requests one after another, each answered 15 ms after it came, for 600 ms.
    while (performance.now() - start < 600) {
      record.laterInFlight = true;
      await sleep(15);
      record.laterInFlight = false;
      scrubAfterAnswer();
      await sleep(1);
    }
    const busyRuns = runs - runsBefore;
    assert.deepEqual(record.quiet, [], 'no quiet scrub while requests keep coming');
    // About 37 answers: the timer ran about once per quiet time, and no deadline was cleared but for an earlier one.
    assert.ok(busyRuns >= 1 && busyRuns <= 8, `${busyRuns} runs of the timer in 600 ms of answers`);
    assert.deepEqual(clearedThenLater, [], 'a cleared deadline left behind');
    await sleep(300);
    assert.equal(record.quiet.length, 1, 'the scrubs run once the answers stop');
  });
});
