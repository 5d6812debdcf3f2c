/**
 * Templates that loop, recurse or allocate without end. Each is answered
 * within its bound with the status the API's error table names; right after it a normal
 * request succeeds quickly and the pool is back to full strength, and the
 * server's own memory is untouched. Short limits keep the suite quick; the
 * nightly set runs the same cases at the defaults.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, record, rssMb, send, NO_RATE_LIMIT } from '../support/hostile.js';
import { isAlive, startService, type Service } from '../support/service.js';
import { COMPUTE_CASES, LAYOUT_NEVER_CONVERGES } from './cases.js';

const WORKERS = 2;
const TIMEOUT_MS = 3000;
const MEMORY_MB = 512;
/** Answer bound: the time limit, plus the kill, plus a margin for a loaded machine. */
const BOUND_MS = TIMEOUT_MS + 1500;

describe(`runaway templates (limit ${TIMEOUT_MS} ms, ${MEMORY_MB} MiB per worker)`, () => {
  let service: Service;
  let serverRssBefore: number;
  before(async () => {
    service = await startService({
      ...NO_RATE_LIMIT,
      WORKERS: String(WORKERS),
      COMPILE_TIMEOUT_MS: String(TIMEOUT_MS),
      MAX_WORKER_MEMORY_MB: String(MEMORY_MB),
    });
    serverRssBefore = rssMb(service.process.pid!);
  });
  after(async () => {
    await service.stop();
  });

  for (const c of COMPUTE_CASES) {
    it(`${c.name} -> ${c.status}`, async (t) => {
      const workersBefore = service.workerPids();
      const answer = await send(service, { data: {}, template: c.template });
      record(t, answer);
      assert.equal(answer.status, c.status, answer.error);
      if (c.error) assert.match(answer.error ?? '', c.error);
      else assert.equal(answer.headers.get('content-type'), 'application/pdf');
      assert.ok(answer.ms < BOUND_MS, `answered after ${answer.ms} ms`);
      if (answer.status === 422) {
        // The runaway compile is killed, not left running.
        const gone = workersBefore.filter((pid) => !service.workerPids().includes(pid));
        assert.equal(gone.length, 1, 'exactly one worker was replaced');
        assert.ok(!isAlive(gone[0]!));
      }
      await assertRecovered(service, WORKERS);
    });
  }

  it('a 100,000-page document really has 100,000 pages', async () => {
    const answer = await send(service, { data: {}, template: '#set page(width: 1cm, height: 1cm)\n#for i in range(99999) [#pagebreak()]' });
    assert.equal(answer.status, 200);
    const pages = Buffer.from(answer.bytes!)
      .toString('latin1')
      .match(/\/Type\s*\/Page\b/g)?.length;
    assert.equal(pages, 100_000);
  });

  it("leaves the server's own memory untouched", () => {
    const grown = rssMb(service.process.pid!) - serverRssBefore;
    // The server only forwards bytes; the 31 MB PDF above passed through it.
    assert.ok(grown < 150, `server grew by ${Math.round(grown)} MiB`);
  });

  it('a layout that never converges is cut after a few passes (Typst 0.11 does not warn about it)', async () => {
    const answer = await send(service, { data: {}, template: LAYOUT_NEVER_CONVERGES });
    assert.equal(answer.status, 200);
    const pages =
      Buffer.from(answer.bytes!)
        .toString('latin1')
        .match(/\/Type\s*\/Page\b/g)?.length ?? 0;
    assert.ok(pages > 1 && pages <= 20, `${pages} pages`);
  });
});
