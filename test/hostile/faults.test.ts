/**
 * Faults from outside the request: a worker killed under a compile, every
 * worker killed at once, and a compiler that cannot load at start.
 *
 * test/pool.test.ts kills every worker during a runaway compile; here only
 * the busy one is killed, and the others must not notice.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { assertRecovered, record, send, NO_RATE_LIMIT } from '../support/hostile.js';
import { isAlive, startService, type Service } from '../support/service.js';

const WORKERS = 2;
const RUNAWAY = '#for i in range(100000) { for j in range(100000) { } }';

/** CPU ticks a process has used (utime + stime from /proc/<pid>/stat). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

describe('killed workers', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS), COMPILE_TIMEOUT_MS: '8000' });
  });
  after(async () => {
    await service.stop();
  });

  it('SIGKILL of the busy worker mid-compile -> 500 JSON for that request only; the pool refills', async (t) => {
    const started = Date.now();
    const pending = send(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 500));
    const pids = service.workerPids();
    const before = pids.map(cpuTicks);
    await new Promise((r) => setTimeout(r, 300));
    const used = pids.map((pid, i) => cpuTicks(pid) - before[i]!);
    const busy = pids[used.indexOf(Math.max(...used))]!;
    const idle = pids.filter((pid) => pid !== busy);
    process.kill(busy, 'SIGKILL');
    const answer = await pending;
    record(t, { ...answer, ms: Date.now() - started });
    assert.equal(answer.status, 500);
    assert.equal(answer.error, 'An unexpected error occurred during document compilation.');
    await assertRecovered(service, WORKERS);
    for (const pid of idle) assert.ok(service.workerPids().includes(pid), 'the idle worker was left alone');
  });

  it('all workers killed at once: a request sent right then waits for the refill and succeeds', async (t) => {
    const pids = service.workerPids();
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const answer = await send(service, { data: { n: 1 }, template: 'after the massacre #data.n' });
    record(t, answer);
    assert.equal(answer.status, 200, answer.error);
    await assertRecovered(service, WORKERS);
    for (const pid of pids) assert.ok(!isAlive(pid));
  });
});

describe('compiler native module missing', () => {
  const repo = fileURLToPath(new URL('../../../', import.meta.url));
  let dir: string;
  before(() => {
    // A copy of the built service whose node_modules lacks the platform package of the Typst binding.
    dir = mkdtempSync(join(tmpdir(), 'typst-pdf-broken-'));
    cpSync(join(repo, 'dist', 'src'), join(dir, 'dist', 'src'), { recursive: true });
    symlinkSync(join(repo, 'dist', 'fonts'), join(dir, 'dist', 'fonts'));
    cpSync(join(repo, 'package.json'), join(dir, 'package.json'));
    mkdirSync(join(dir, 'node_modules', '@myriaddreamin'), { recursive: true });
    for (const entry of readdirSync(join(repo, 'node_modules'))) {
      if (entry === '@myriaddreamin' || entry.startsWith('.')) continue;
      symlinkSync(join(repo, 'node_modules', entry), join(dir, 'node_modules', entry));
    }
    // Copied, not linked: a link would resolve the platform package from the real node_modules.
    cpSync(
      join(repo, 'node_modules', '@myriaddreamin', 'typst-ts-node-compiler'),
      join(dir, 'node_modules', '@myriaddreamin', 'typst-ts-node-compiler'),
      { recursive: true },
    );
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to start with a clear message, exit code 1, and no worker left', (t) => {
    const started = Date.now();
    const run = spawnSync(process.execPath, [join(dir, 'dist', 'src', 'main.js')], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', API_KEYS: 'k', WORKERS: '2' },
      encoding: 'utf8',
      // A service that starts after all is killed at the timeout, not asked to shut down (it would keep the test waiting).
      killSignal: 'SIGKILL',
      timeout: 20_000,
    });
    t.diagnostic(`exit ${run.status} in ${Date.now() - started} ms: ${run.stderr.trim().split('\n')[0]}`);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(
      run.stderr,
      /^typst-pdf-service: Typst engine failed to start: Failed to load native binding \(.*Cannot find module '@myriaddreamin\/typst-ts-node-compiler-linux-x64-gnu'/m,
    );
    assert.ok(!run.stdout.includes('listening'), 'it did not listen');
    const left = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(dir);
        } catch {
          return false;
        }
      });
    assert.deepEqual(left, [], 'no process of the broken service is left');
  });
});
