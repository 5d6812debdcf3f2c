/**
 * /healthz and /readyz as a load balancer sees them: no key needed,
 * readiness lost while the only worker restarts and while the queue is
 * full, liveness kept throughout, and neither waits for the compiler.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generate, startService, waitReady, type Service } from './support/service.js';

const RUNAWAY = '#for i in range(100000) { for j in range(100000) { } }';

async function probe(service: Service, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${service.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('health and readiness', () => {
  let service: Service;
  before(async () => {
    // No spare worker: a killed worker leaves the pool without one until its replacement has started.
    service = await startService({ WORKERS: '1', SPARE_WORKERS: '0', QUEUE_LIMIT: '1', COMPILE_TIMEOUT_MS: '2000' });
  });
  after(async () => {
    await service.stop();
  });

  it('answers both without a key', async () => {
    assert.deepEqual(await probe(service, '/healthz'), { status: 200, body: { status: 'ok' } });
    assert.deepEqual(await probe(service, '/readyz'), {
      status: 200,
      body: {
        status: 'ready',
        size: 1,
        ready: 1,
        busy: 0,
        queued: 0,
        queueLimit: 1,
        spare: 0,
        rateLimit: { store: 'memory', shared: false },
        signing: false,
      },
    });
  });

  it('is not ready while the only worker restarts, stays alive, and is ready again after', async () => {
    const [pid] = service.workerPids();
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    let seen: Record<string, unknown> | undefined;
    const deadline = Date.now() + 3000;
    while (!seen && Date.now() < deadline) {
      const ready = await probe(service, '/readyz');
      if (ready.status === 503) seen = ready.body;
      assert.equal((await probe(service, '/healthz')).status, 200, 'liveness is kept');
    }
    assert.ok(seen, 'readiness was lost during the restart');
    assert.equal(seen.status, 'unavailable');
    assert.equal(seen.reason, 'no worker is ready');
    await waitReady(service, 1);
    assert.notDeepEqual(service.workerPids(), [pid]);
  });

  it('is not ready while the queue is full, answering at once while the worker is busy', async () => {
    const busy = generate(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 300));
    const queued = generate(service, { data: {}, template: 'queued' });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const ready = await probe(service, '/readyz');
    assert.ok(Date.now() - started < 1000, 'readiness does not wait for the compiler');
    assert.equal(ready.status, 503);
    assert.equal(ready.body.reason, 'render queue is full');
    assert.equal(ready.body.busy, 1);
    assert.equal(ready.body.queued, 1);
    assert.equal((await probe(service, '/healthz')).status, 200);
    assert.equal((await busy).status, 422);
    assert.equal((await queued).status, 200);
    await waitReady(service, 1);
  });
});
