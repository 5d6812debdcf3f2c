/**
 * Nightly: the slow hostile cases, at the service's default limits
 * (10 s per compile, 2 GiB per worker), and more fuzzing. Run with
 * `npm run test:nightly`; not part of `npm test`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, record, rssMb, send, NO_RATE_LIMIT } from '../../support/hostile.js';
import { head, open, readAll } from '../../support/raw-http.js';
import { startService, type Service } from '../../support/service.js';
import { COMPUTE_CASES, EITHER_LIMIT, type HostileCase } from '../cases.js';

const WORKERS = 2;
const BOUND_MS = 10_000 + 1500;

const SLOW_CASES: HostileCase[] = [
  ...COMPUTE_CASES,
  // One character at a time: grows too slowly to reach 2 GiB in 10 s, so the time limit stops it.
  { name: 'string repetition 10^9 times', template: '#("x" * 1000000000).len()', status: 422, error: EITHER_LIMIT },
  { name: '100,000 pages with text on each', template: '#for i in range(100000) [Page #i #pagebreak()]', status: 200 },
];

describe('hostile templates at the default limits', () => {
  let service: Service;
  let serverRssBefore: number;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS) });
    serverRssBefore = rssMb(service.process.pid!);
  });
  after(async () => {
    await service.stop();
  });

  for (const c of SLOW_CASES) {
    it(`${c.name} -> ${c.status}`, async (t) => {
      const answer = await send(service, { data: {}, template: c.template });
      record(t, answer);
      assert.equal(answer.status, c.status, answer.error);
      if (c.error) assert.match(answer.error ?? '', c.error);
      assert.ok(answer.ms < BOUND_MS, `answered after ${answer.ms} ms`);
      await assertRecovered(service, WORKERS);
    });
  }

  it("the server's own memory is untouched", () => {
    const grown = rssMb(service.process.pid!) - serverRssBefore;
    assert.ok(grown < 200, `server grew by ${Math.round(grown)} MiB`);
  });
});

describe('slowloris past the request deadline', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS), COMPILE_TIMEOUT_MS: '4000' });
  });
  after(async () => {
    await service.stop();
  });

  it("a client that sends headers and stalls is cut off (408) within the 60 s deadline plus Node's 30 s check", async (t) => {
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const socket = await open(service);
        const answer = readAll(socket);
        socket.write(head({ 'content-length': 1000 }));
        socket.write('{"data":');
        return answer;
      }),
    );
    const ms = Date.now() - started;
    record(t, { status: answers[0]!.status, ms });
    for (const a of answers) assert.ok(a.status === 408 || a.status === 0, `status ${a.status}`);
    assert.ok(ms < 60_000 + 30_000 + 5000, `cut off after ${ms} ms`);
    await assertRecovered(service, WORKERS);
  });

  it('the deadline does not cut a compile that runs longer than it', async (t) => {
    const answer = await send(service, { data: {}, template: '#for i in range(100000) { for j in range(100000) { } }' });
    record(t, answer);
    assert.equal(answer.status, 422);
    assert.equal(answer.error, 'Template compilation exceeded the 4 second limit');
  });
});
