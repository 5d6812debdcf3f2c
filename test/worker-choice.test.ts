/**
 * Which idle worker the pool hands a job to (src/render/pool.ts, idleSlot),
 * on a real pool of two workers: the one that answered last, unless its
 * job left it a long clean-up (a long compile, a failure, a 0.14 compiler to
 * make anew), when the one idle the longest (the last one may still be
 * cleaning up after its answer). Which worker compiled a job is read from
 * the workers' CPU time: the one whose time grew by the compile.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkBody } from '../src/bytes/json-check.js';
import type { Job } from '../src/bytes/layout.js';
import { LONG_COMPILE_MS } from '../src/render/job.js';
import type { RenderPool } from '../src/render/pool.js';
import { Holdings } from '../src/retention/holdings.js';
import { suitePool } from './support/pool.js';

function jobOf(template: string, typst?: '0.14'): Job {
  const body = Buffer.from(JSON.stringify({ data: {}, template, typst }));
  const check = checkBody(body);
  assert.ok(check.ok);
  return { body, layout: check.layout };
}

/** A compile of about 50 to 100 ms, and one of a few ms; each makes a one-page PDF. */
const long = () => jobOf('#let s = 0\n#for i in range(300000) { s += i }\n#s');
const short = () => jobOf('#lorem(100)');
/** About 10 ms of compile: short, yet plain in its worker's CPU time beside a worker that has just started. */
const medium = () => jobOf('#let s = 0\n#for i in range(40000) { s += i }\n#s');

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

/** Waits until none of `pids` has spent more than 0.5 ms of CPU in 100 ms. */
async function quiet(pids: number[]): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const before = pids.map(cpuMs);
    await sleep(100);
    if (pids.every((pid, at) => cpuMs(pid) - before[at]! < 0.5)) return;
  }
  assert.fail('the workers never went quiet');
}

/** Runs `job` alone and returns the worker that compiled it: the one whose CPU time grew the most, and by how much. */
async function workerOf(pool: RenderPool, job: Job): Promise<{ pid: number; kind: string; compileMs: number; grewMs: number }> {
  const pids = workerPids();
  assert.equal(pids.length, 2, 'two workers');
  // The last job's worker cleans up after its answer, and a new worker settles after its start: both done first,
  // so that only this compile shows. (Which worker the pool chooses does not depend on time.)
  await quiet(pids);
  const before = pids.map(cpuMs);
  const holdings = new Holdings();
  const result = await pool.render(job, holdings);
  holdings.wipe();
  const grew = pids.map((pid, i) => cpuMs(pid) - before[i]!);
  const at = grew[0]! >= grew[1]! ? 0 : 1;
  return { pid: pids[at]!, kind: result.kind, compileMs: result.compileMs, grewMs: grew[at]! };
}

describe('the worker a job goes to', () => {
  const pool = suitePool(2);

  it('is the one that answered last after a short compile, the other after a long one', async () => {
    // The rule is checked against the compile time the pool itself was told (a short compile on a loaded machine may be long).
    const jobs = [short, short, short, long, long, short, short, long, short];
    let last = await workerOf(pool, short());
    const seen = { same: 0, other: 0 };
    for (const job of jobs) {
      const next = await workerOf(pool, job());
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

  it('is the other one after a failed compile, whose worker then collects its whole heap', async () => {
    await workerOf(pool, short());
    const failed = await workerOf(pool, jobOf('#let x = ('));
    assert.equal(failed.kind, 'failed');
    assert.ok(failed.grewMs > 0, "the failed compile shows in its worker's CPU time");
    const next = await workerOf(pool, long());
    assert.equal(next.kind, 'pdf');
    assert.notEqual(next.pid, failed.pid, 'the next job went to the other worker');
  });

  it('is the other one after a short job whose 0.14 compiler its clean-up drops, and the worker makes anew', async () => {
    // `eval` makes the 0.14 engine compile the template as a file, which its compiler then keeps (engine.ts, clean).
    let dropping: Awaited<ReturnType<typeof workerOf>> | undefined;
    // Short, so that only the dropped compiler makes the clean-up long (a loaded machine may make a compile long).
    for (let i = 0; i < 5 && !(dropping && dropping.compileMs < LONG_COMPILE_MS); i++) {
      await workerOf(pool, short());
      dropping = await workerOf(pool, jobOf('#eval("1 + 1")', '0.14'));
      assert.equal(dropping.kind, 'pdf');
    }
    assert.ok(dropping && dropping.compileMs < LONG_COMPILE_MS, `a short compile (${dropping?.compileMs.toFixed(1)} ms)`);
    const next = await workerOf(pool, long());
    assert.notEqual(next.pid, dropping.pid, 'the next job went to the other worker');
  });
});

describe('a worker started in place of another', () => {
  const pool = suitePool(2, 3);

  /** Waits until two workers are up and ready (one ended after WORKER_MAX_JOBS is replaced). */
  async function twoReady(): Promise<void> {
    for (let i = 0; i < 200 && (workerPids().length !== 2 || pool.stats().ready < 2); i++) await sleep(50);
    assert.equal(workerPids().length, 2, 'two workers again');
  }

  it('is idle the longest: after a short compile the warm worker takes the next job, after a long one the new worker', async () => {
    const original = workerPids();
    const lastCompile = new Map<number, number>();
    for (let i = 0; i < 12 && original.every((pid) => workerPids().includes(pid)); i++) {
      const ran = await workerOf(pool, medium());
      await twoReady();
      // A worker ended at once after its third job: that job was its own (its CPU time could not be read after it).
      lastCompile.set(original.find((pid) => !workerPids().includes(pid)) ?? ran.pid, ran.compileMs);
    }
    const other = original.find((pid) => workerPids().includes(pid));
    const fresh = workerPids().find((pid) => !original.includes(pid));
    assert.ok(other !== undefined && fresh !== undefined, 'one worker was replaced (WORKER_MAX_JOBS 3)');
    // The warm worker is the one that answered last (or, if it never ran, the older one of two never used).
    const warmCompile = lastCompile.get(other) ?? 0;
    const expected = warmCompile < LONG_COMPILE_MS ? other : fresh;
    // A long job, whose worker its CPU time shows beyond doubt (which worker it goes to does not depend on its own length).
    assert.equal((await workerOf(pool, long())).pid, expected, `after the warm worker's ${warmCompile.toFixed(1)} ms compile`);
  });
});
