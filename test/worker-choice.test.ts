/**
 * Which idle worker the pool hands a job to (src/render/pool.ts, idleSlot),
 * on a real pool of two workers: the one that answered last, unless its
 * compile was long, when the one idle the longest (the last one may still be
 * cleaning up after its answer). Which worker compiled a job is read from
 * the workers' CPU time: the one whose time grew by the compile.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkBody } from '../src/bytes/json-check.js';
import type { Job } from '../src/bytes/layout.js';
import { LONG_COMPILE_MS } from '../src/render/pool.js';
import { Holdings } from '../src/retention/holdings.js';
import { suitePool } from './support/pool.js';

function jobOf(template: string): Job {
  const body = Buffer.from(JSON.stringify({ data: {}, template }));
  const check = checkBody(body);
  assert.ok(check.ok);
  return { body, layout: check.layout };
}

/** A compile of about 50 to 100 ms, and one of a few ms; each makes a one-page PDF. */
const long = () => jobOf('#let s = 0\n#for i in range(300000) { s += i }\n#s');
const short = () => jobOf('#lorem(100)');

/** This process's children: the pool's workers (the only processes this file starts). */
function workerPids(): number[] {
  const pids: number[] = [];
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    const text = readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').trim();
    if (text) pids.push(...text.split(/\s+/).map(Number));
  }
  return pids;
}

/** CPU ms of all of a process's threads, as the scheduler counts them. */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // the thread ended
    }
  }
  return ns / 1e6;
}

describe('the worker a job goes to', () => {
  const pool = suitePool(2);

  /** Runs `job` alone and returns the worker that compiled it: the one whose CPU time grew the most, and by how much. */
  async function workerOf(job: Job): Promise<{ pid: number; compileMs: number; grewMs: number }> {
    const pids = workerPids();
    assert.equal(pids.length, 2, 'two workers');
    // The last job's worker cleans up after its answer: done by then, so that only this compile shows. (The choice does not depend on time.)
    await sleep(150);
    const before = pids.map(cpuMs);
    const holdings = new Holdings();
    const result = await pool.render(job, holdings);
    assert.equal(result.kind, 'pdf');
    holdings.wipe();
    const grew = pids.map((pid, i) => cpuMs(pid) - before[i]!);
    const at = grew[0]! >= grew[1]! ? 0 : 1;
    return { pid: pids[at]!, compileMs: result.compileMs, grewMs: grew[at]! };
  }

  it('is the one that answered last after a short compile, the other after a long one', async () => {
    // The rule is checked against the compile time the pool itself was told (a short compile on a loaded machine may be long).
    const jobs = [short, short, short, long, long, short, short, long, short];
    let last = await workerOf(short());
    const seen = { same: 0, other: 0 };
    for (const job of jobs) {
      const next = await workerOf(job());
      assert.ok(next.grewMs >= 1, `the compile shows in its worker's CPU time (${next.grewMs.toFixed(2)} ms)`);
      if (last.compileMs < LONG_COMPILE_MS) {
        assert.equal(next.pid, last.pid, `after a ${last.compileMs.toFixed(1)} ms compile, the same worker`);
        seen.same++;
      } else {
        assert.notEqual(next.pid, last.pid, `after a ${last.compileMs.toFixed(1)} ms compile, the other worker`);
        seen.other++;
      }
      last = next;
    }
    assert.ok(seen.same >= 2 && seen.other >= 2, `both cases came up (${JSON.stringify(seen)})`);
  });
});
