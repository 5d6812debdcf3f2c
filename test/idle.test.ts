/**
 * An idle server sleeps: no timer of its own wakes it while no request
 * comes. Each wake costs CPU, and a wake that came on a fixed period also
 * came while the server waited on a long compile: sampling the event loop's
 * delay every 10 ms, flushing the log every 100 ms and looking at the
 * workers every 50 ms woke it 130 times a second. Counted by the kernel
 * (the times its thread was put on a CPU, /proc/PID/task/TID/schedstat),
 * not timed.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { generate, startService, type Service } from './support/service.js';

/** Times the thread has been put on a CPU so far: schedstat's third field. */
function runs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1').split(' ')[2]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an idle server', () => {
  let service: Service;
  before(async () => {
    service = await startService({ WORKERS: '1', LOG_LEVEL: 'info', MAX_WORKER_MEMORY_MB: '1024' });
  });
  after(async () => {
    await service.stop();
  });

  it('is not woken while no request comes, after a compile and a log line', async (t) => {
    const pid = service.process.pid!;
    if (!existsSync(`/proc/${pid}/task/${pid}/schedstat`)) return t.skip('no scheduler statistics on this host');
    const res = await generate(service, { data: { n: 1 }, template: 'Idle #data.n' });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    // What an answer leaves due: the heap and read-buffer scrubs, on one timer, and the log line's flush (both 100 ms).
    await sleep(500);
    // The quieter of two seconds: a compile V8 finishes in the background, or a wake the machine's load splits
    // in two, is not the server's timers.
    const woken: number[] = [];
    for (let second = 0; second < 2; second++) {
      const first = runs(pid);
      await sleep(1000);
      woken.push(runs(pid) - first);
    }
    assert.ok(Math.min(...woken) <= 5, `the event-loop thread ran ${woken.join(' and ')} times in two seconds of idleness`);
  });
});
