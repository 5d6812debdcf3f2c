/**
 * Output limits through the real service: a PDF over MAX_PDF_BYTES is 422
 * from the worker (which stays), answers nobody reads are bounded in total
 * (new compiles get 503 past MAX_PENDING_ANSWERS_MB, and a key's past half
 * of it, while other keys are served), a client that takes
 * nothing is cut off after READER_STALL_TIMEOUT_MS, and what is cut off is
 * wiped: server memory comes back, and the PDF's title is nowhere in it.
 * Answers for clients that left while they were made count nothing toward
 * that bound.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { encodings, scanMemory } from './support/memory-scan.js';
import { delta, scrape } from './support/metrics.js';
import { head, open } from './support/raw-http.js';
import { generate, readiness, startService, TEST_KEY, type Service } from './support/service.js';

/** A template of `pages` pages with `title` in the PDF's metadata (about 300 bytes a page). */
const manyPages = (pages: number, title: string) => ({
  data: {},
  template: `#set document(title: "${title}")\n#for i in range(${pages}) { [#i]; pagebreak() }`,
});

function residentMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

describe('MAX_PDF_BYTES', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, MAX_PDF_BYTES: String(1024 * 1024) });
  });
  after(async () => {
    await service.stop();
  });

  it('answers 422 for a larger PDF, counts it, and keeps the worker', async () => {
    const metrics = `${service.url}/metrics`;
    const before = (await scrape(metrics)).samples;
    const pids = service.workerPids().sort();
    const res = await generate(service, manyPages(20_000, 'big'));
    assert.equal(res.status, 422);
    assert.deepEqual(await res.json(), { error: 'The PDF exceeds the 1 MB output limit' });
    const small = await generate(service, manyPages(10, 'small'));
    assert.equal(small.status, 200);
    await small.arrayBuffer();
    const after = (await scrape(metrics)).samples;
    assert.equal(delta(before, after, 'typst_pdf_output_refused_total{reason="pdf_too_large"}'), 1);
    assert.deepEqual(service.workerPids().sort(), pids, 'no worker was replaced');
  });
});

describe('answers nobody reads', () => {
  let service: Service;
  // Long enough that an answer is still held while the next one compiles on a busy machine.
  const STALL_MS = 6000;
  const OTHER_KEY = 'other-key-0123456789';
  before(async () => {
    // A compile time limit a heavily loaded machine cannot reach: a 20,000-page compile cut off (422) is not what is tested.
    service = await startService({
      ...NO_RATE_LIMIT,
      MAX_PENDING_ANSWERS_MB: '16',
      READER_STALL_TIMEOUT_MS: String(STALL_MS),
      COMPILE_TIMEOUT_MS: '120000',
      API_KEYS: `${TEST_KEY},${OTHER_KEY}`,
    });
  });
  after(async () => {
    await service.stop();
  });

  it('are bounded in total, cut off when stalled, wiped, and the service goes on', async (t) => {
    const metrics = `${service.url}/metrics`;
    const before = (await scrape(metrics)).samples;
    const pid = service.process.pid!;
    const idleMiB = residentMiB(pid);
    const title = `UNREAD${randomBytes(9).toString('hex')}`;
    // About 8 MB each (a little under 8 MiB): once two are held, the key's half of the bound of 16 MiB is reached.
    const body = Buffer.from(JSON.stringify(manyPages(20_000, title)));
    const sockets: Socket[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const socket = await open(service);
      sockets.push(socket);
      socket.on('error', () => undefined);
      // Takes the first bytes of the answer, enough to see its status, then nothing more.
      const status = new Promise<number>((resolve) => {
        socket.once('data', (chunk: Buffer) => {
          socket.pause();
          resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 0));
        });
        socket.once('close', () => resolve(0));
      });
      socket.write(head({ 'content-length': body.length, connection: 'keep-alive' }));
      socket.write(body);
      statuses.push(await status);
    }
    const peakMiB = residentMiB(pid);
    t.diagnostic(
      `statuses ${statuses.join(' ')}; server RSS idle ${idleMiB.toFixed(0)} MiB, with the answers held ${peakMiB.toFixed(0)} MiB`,
    );
    assert.ok(statuses.filter((s) => s === 200).length >= 2, "answers up to the key's share were sent");
    assert.ok(statuses.includes(503), "compiles past the key's share were refused");
    // Meanwhile another key's compile is served: one key's answers held at their share leave it the other half.
    const other = await generate(service, manyPages(3, 'other key'), { key: OTHER_KEY });
    assert.equal(other.status, 200, "another key's compile is served while the first key's answers are held");
    await other.arrayBuffer();
    assert.ok(
      statuses.every((s) => s === 200 || s === 503),
      `only 200 and 503: ${statuses}`,
    );
    assert.ok(peakMiB - idleMiB < 300, `server RSS grew by ${(peakMiB - idleMiB).toFixed(0)} MiB`);

    // The stalled readers are cut off (Node's socket timeout may take up to twice its time:
    // it first checks whether the kernel took more bytes), and a new compile is served again.
    const held = async () => (await scrape(metrics)).samples.get('typst_pdf_pending_answer_bytes');
    for (let waited = 0; (await held()) !== 0; waited += 200) {
      assert.ok(waited < STALL_MS * 5, 'stalled answers were cut off');
      await sleep(200);
    }
    const res = await generate(service, manyPages(3, 'after'));
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const after = (await scrape(metrics)).samples;
    assert.equal(
      delta(before, after, 'typst_pdf_output_refused_total{reason="reader_stalled"}'),
      statuses.filter((s) => s === 200).length,
      'every unread answer was cut off and counted',
    );
    assert.ok(delta(before, after, 'typst_pdf_unavailable_total{reason="answers_pending"}') >= 1, 'refusals counted');
    for (const socket of sockets) socket.destroy();
    t.diagnostic(`server RSS once they were cut off: ${residentMiB(pid).toFixed(0)} MiB`);

    await sleep(300);
    const hits = scanMemory(pid, encodings(title));
    assert.equal(hits.length, 0, 'the answers cut off were wiped');
  });
});

describe('answers for clients that left', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1' });
  });
  after(async () => {
    await service.stop();
  });

  it('counts nothing for clients that left while their answer was made', async () => {
    const metrics = `${service.url}/metrics`;
    const pending = async () => (await scrape(metrics)).samples.get('typst_pdf_pending_answer_bytes');
    // A result of about 1 MB first: the buffer the server keeps for the worker's results is that large.
    const warm = await generate(service, manyPages(3000, 'warm'));
    assert.equal(warm.status, 200);
    await warm.arrayBuffer();
    // Three clients that leave while their worker compiles. On a loaded machine a compile can begin and end between two
    // looks at the readiness: that client got its answer, did not leave, and another one is sent.
    let left = 0;
    for (let sent = 0; left < 3; sent++) {
      assert.ok(sent < 10, `only ${left} of ${sent} clients were seen to leave while their worker compiled`);
      const abort = new AbortController();
      let answered = false;
      const gone = generate(service, manyPages(3000, `gone${sent}`), { signal: abort.signal })
        .then(async (res) => {
          await res.arrayBuffer();
          return res;
        })
        .catch((error: Error) => error)
        .finally(() => {
          answered = true;
        });
      while (!answered && (await readiness(service)).busy === 0) await sleep(10);
      const compiling = !answered;
      abort.abort();
      if (compiling && (await gone) instanceof Error) left++;
      const since = Date.now();
      while ((await readiness(service)).busy !== 0) {
        assert.ok(Date.now() - since < 30_000, 'the worker is still busy 30 s after its client left');
        await sleep(20);
      }
    }
    await sleep(100);
    assert.equal(await pending(), 0, 'no answer is held');
  });
});
