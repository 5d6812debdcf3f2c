/**
 * When the scrubs after answers run (src/retention/scrub-timer.ts), with
 * real timers: once quiet, never while a request is in flight but for the
 * read buffers' bound, and on a timer that answers and requests never
 * clear, so that a stream of answers wakes the process at most once per
 * quiet time. The scrubs themselves are checked from outside by
 * retention.test.ts and read-buffer-scrub.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

// Timer callbacks that ran, counted around the module's own setTimeout (imported after the count is in place).
let fired = 0;
const realSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
  realSetTimeout(
    (...inner: unknown[]) => {
      fired++;
      callback(...inner);
    },
    ms,
    ...args,
  )) as typeof setTimeout;
const { scrubAfterAnswer, setScrubs } = await import('../src/retention/scrub-timer.js');
globalThis.setTimeout = realSetTimeout;

const sleep = (ms: number) => new Promise((resolve) => realSetTimeout(resolve, ms));

interface Record {
  inFlight: number;
  quiet: number[];
  overdue: number[];
}

/** Scrubs that note when they ran (ms since `start`), with `inFlight` requests as the record says. */
function recorded(start: number): Record {
  const record: Record = { inFlight: 0, quiet: [], overdue: [] };
  setScrubs({
    inFlight: () => record.inFlight,
    quiet: () => record.quiet.push(performance.now() - start),
    overdue: () => record.overdue.push(performance.now() - start),
  });
  return record;
}

describe('the scrubs after answers', () => {
  it('run once, 100 ms after the last answer with none in flight', async () => {
    const start = performance.now();
    const record = recorded(start);
    scrubAfterAnswer();
    await sleep(60);
    scrubAfterAnswer();
    await sleep(250);
    assert.equal(record.quiet.length, 1, `quiet scrubs at ${record.quiet}`);
    assert.ok(record.quiet[0]! >= 155 && record.quiet[0]! < 300, `ran ${record.quiet[0]} ms after the first answer`);
    assert.deepEqual(record.overdue, []);
  });

  it('wait for a request in flight, the read buffers no longer than 1 s after the last answer', async () => {
    const start = performance.now();
    const record = recorded(start);
    scrubAfterAnswer();
    record.inFlight = 1;
    await sleep(400);
    assert.deepEqual(record.quiet, [], 'no scrub while a request is in flight');
    assert.deepEqual(record.overdue, []);
    await sleep(800);
    assert.equal(record.overdue.length, 1, `overdue scrubs at ${record.overdue}`);
    assert.ok(record.overdue[0]! >= 995, `the read buffers' scrub ran ${record.overdue[0]} ms after the answer`);
    assert.deepEqual(record.quiet, []);
    // The request is answered: its answer asks again, and the heap's collection follows once quiet.
    record.inFlight = 0;
    scrubAfterAnswer();
    await sleep(200);
    assert.equal(record.quiet.length, 1);
  });

  it('wake the process at most once per 100 ms while answers keep coming', async () => {
    const start = performance.now();
    const record = recorded(start);
    const firedBefore = fired;
    // A client sending requests one after another, each answered 15 ms after it came, for 600 ms.
    while (performance.now() - start < 600) {
      record.inFlight = 1;
      await sleep(15);
      record.inFlight = 0;
      scrubAfterAnswer();
      await sleep(1);
    }
    const busyFired = fired - firedBefore;
    assert.deepEqual(record.quiet, [], 'no quiet scrub while requests keep coming');
    // 37 answers; the timer runs about once per quiet time (each run is a wake, and a deadline is only ever moved
    // earlier, so none is left behind to wake the process for nothing).
    assert.ok(busyFired <= 8, `${busyFired} timer wakes in 600 ms of answers`);
    await sleep(200);
    assert.equal(record.quiet.length, 1, 'the scrubs run once the answers stop');
  });
});
