/**
 * A template that outgrows the memory its cgroup has before the pool's own
 * cap (sampled) sees it: the kernel's out-of-memory killer ends the worker
 * with SIGKILL, and the answer is the memory limit's 422, not a crash of
 * the key's (render/oom-kills.ts). The service runs in a memory cgroup of
 * its own, made here under this process's (cgroup v1, or v2 where this
 * process may make one); where none can be made, the test says so and is
 * skipped, not passed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { MESSAGES } from '../../src/messages.js';
import { delta, scrape } from '../support/metrics.js';
import { generate, startService, type Service } from '../support/service.js';

/** Enough for the server and an idle worker, far from what the template asks. */
const LIMIT_BYTES = 900 * 1024 * 1024;
/** 40 strings of 50 MB, made as fast as Typst can: about 2 GB. */
const GREEDY = '#let a = range(40).map(i => "x" * 50000000 + str(i))\n#a.len()';

interface Cgroup {
  dir: string;
  /** The file whose `oom_kill` line counts the cgroup's OOM kills. */
  events: string;
}

/** A child memory cgroup of this process's, limited to LIMIT_BYTES, or why none could be made. */
function makeCgroup(): Cgroup | string {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v1 = lines.find((l) => /^\d+:memory:/.test(l))?.replace(/^\d+:memory:/, '');
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  const where =
    v1 !== undefined
      ? { root: `/sys/fs/cgroup/memory${v1}`, limit: 'memory.limit_in_bytes', events: 'memory.oom_control' }
      : v2 !== undefined
        ? { root: `/sys/fs/cgroup${v2}`, limit: 'memory.max', events: 'memory.events' }
        : undefined;
  if (!where) return 'no memory cgroup controller found';
  const dir = `${where.root.replace(/\/$/, '')}/typst-pdf-oom-test-${process.pid}`;
  try {
    mkdirSync(dir);
    writeFileSync(`${dir}/${where.limit}`, String(LIMIT_BYTES));
  } catch (error) {
    return `no memory cgroup could be made here (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  return { dir, events: `${dir}/${where.events}` };
}

const oomKills = (cgroup: Cgroup) => Number(/^oom_kill (\d+)$/m.exec(readFileSync(cgroup.events, 'utf8'))?.[1] ?? NaN);

describe('a worker the kernel ends for memory', () => {
  const cgroup = makeCgroup();
  let service: Service | undefined;
  before(async () => {
    if (typeof cgroup === 'string') return;
    // The service moves into the cgroup before it starts, so its workers are born there. The kernel reaches its
    // kill only after it has reclaimed what it can of the cgroup: 6.6 s alone on a 2-core machine, past 10 s under
    // the rest of the tests, so the compile limit is set well beyond it.
    service = await startService(
      { WORKERS: '1', MAX_WORKER_MEMORY_MB: '0', COMPILE_TIMEOUT_MS: '60000' },
      { prefix: ['sh', '-c', `echo $$ > ${cgroup.dir}/cgroup.procs && exec "$@"`, 'sh'] },
    );
  });
  after(async () => {
    await service?.stop();
    if (typeof cgroup === 'string') return;
    // The workers leave the cgroup as they end, a moment after the server.
    for (let i = 0; ; i++) {
      try {
        rmdirSync(cgroup.dir);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EBUSY' || i >= 50) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });

  it('answers the memory limit’s 422, counts no crash, and serves the next request', async (t) => {
    if (typeof cgroup === 'string' || !service) return t.skip(typeof cgroup === 'string' ? cgroup : 'the service did not start');
    const killsBefore = oomKills(cgroup);
    const metricsBefore = (await scrape(`${service.url}/metrics`)).samples;
    const res = await generate(service, { data: {}, template: GREEDY });
    assert.equal(res.status, 422);
    assert.deepEqual(await res.json(), { error: MESSAGES.memory });
    assert.ok(oomKills(cgroup) > killsBefore, 'the kernel killed it, not the pool');
    const after = (await scrape(`${service.url}/metrics`)).samples;
    assert.equal(delta(metricsBefore, after, 'typst_pdf_worker_restarts_total{reason="memory"}'), 1);
    assert.equal(delta(metricsBefore, after, 'typst_pdf_worker_restarts_total{reason="crash"}'), 0);
    assert.equal(delta(metricsBefore, after, 'typst_pdf_worker_restarts_total{reason="killed"}'), 0);
    const next = await generate(service, { data: {}, template: 'served' });
    assert.equal(next.status, 200);
  });
});
