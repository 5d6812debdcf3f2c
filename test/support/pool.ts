/**
 * A real pool of worker processes in the test's own process, for the tests
 * of the pool itself: started before the suite's tests, closed after them.
 */
import { after, before } from 'node:test';
import { loadFontCatalog } from '../../src/render/fonts/catalog.js';
import { RenderPool } from '../../src/render/pool.js';
import { createSandbox } from '../../src/render/sandbox.js';

/** A pool of `workers` workers and no spare, no limits a test could reach, and no recycling unless `workerMaxJobs` is given. */
export function suitePool(workers: number, workerMaxJobs = 0): RenderPool {
  const sandbox = createSandbox(undefined);
  const pool = new RenderPool({
    workers,
    spareWorkers: 0,
    compileTimeoutMs: 60_000,
    queueLimit: 4,
    queueTimeoutMs: 60_000,
    workerMaxJobs,
    maxWorkerMemoryMb: 0,
    engine: { fonts: loadFontCatalog() },
    env: sandbox.env,
  });
  before(() => pool.start());
  after(async () => {
    await pool.close();
    sandbox.dispose();
  });
  return pool;
}
