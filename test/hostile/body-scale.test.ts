/**
 * Bodies that cost the server work before any compile, against a real
 * server: hundreds of thousands of repeated asset names are checked in
 * linear time while /healthz keeps answering, and an image asset whose
 * header declares too many pixels is refused from the header, naming it,
 * without a worker ever seeing it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, NO_RATE_LIMIT, record, send } from '../support/hostile.js';
import { delta, scrape } from '../support/metrics.js';
import { parsePdf } from '../support/pdf.js';
import { solidPng } from '../support/png.js';
import { startService, type Service } from '../support/service.js';

const WORKERS = 1;
let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS) });
});
after(async () => {
  await service.stop();
});

/** Polls /healthz every 10 ms until `done` settles; the longest answer time seen, in ms. */
async function healthzWhile(done: Promise<unknown>): Promise<{ maxMs: number; answers: number }> {
  let finished = false;
  void done.finally(() => (finished = true));
  let maxMs = 0;
  let answers = 0;
  while (!finished) {
    const started = performance.now();
    const res = await fetch(`${service.url}/healthz`);
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    maxMs = Math.max(maxMs, performance.now() - started);
    answers++;
    await new Promise((r) => setTimeout(r, 10));
  }
  return { maxMs, answers };
}

/** 29 bytes: a GIF whose screen and only frame are 65535 × 65535, with one byte of image data. */
const GIF_BOMB = Buffer.from([
  ...Buffer.from('GIF89a'),
  0xff,
  0xff,
  0xff,
  0xff,
  0x00,
  0x00,
  0x00,
  0x2c,
  0x00,
  0x00,
  0x00,
  0x00,
  0xff,
  0xff,
  0xff,
  0xff,
  0x00,
  0x02,
  0x02,
  0x44,
  0x01,
  0x00,
  0x3b,
]);

/** A PNG header declaring 30000 × 30000 grey pixels, with a little data after it. */
function pngHeader(width: number, height: number): Buffer {
  const png = solidPng(1, 1, [0, 0, 0]);
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  return png;
}

describe('a body of many repeated asset names', () => {
  it('400,000 repeated names are answered 200 (the last value counts) in under 2 s, /healthz answering meanwhile', async (t) => {
    const body = `{"data":{},"template":"#read(\\"a\\")","assets":{${'"a":"",'.repeat(400_000)}"a":"T0s="}}`;
    const answer = send(service, body);
    const health = await healthzWhile(answer);
    const { status, ms, error, bytes } = await answer;
    record(t, { status, ms, error });
    t.diagnostic(`/healthz: ${health.answers} answers meanwhile, the slowest in ${health.maxMs.toFixed(0)} ms`);
    assert.equal(status, 200, error);
    assert.deepEqual((await parsePdf(bytes!)).text, ['OK']);
    assert.ok(ms < 2000, `answered in ${ms} ms`);
    assert.ok(health.maxMs < 500, `/healthz took up to ${health.maxMs.toFixed(0)} ms`);
  });
});

describe('image assets that declare too many pixels', () => {
  it('a 29-byte GIF of 65535 × 65535: 400 naming it, in under a second, no worker restarted', async (t) => {
    assert.equal(GIF_BOMB.length, 29);
    const pids = service.workerPids();
    const metricsBefore = await scrape(`${service.url}/metrics`);
    const answer = await send(service, { data: {}, template: '#image("big.gif")', assets: { 'big.gif': GIF_BOMB.toString('base64') } });
    record(t, answer);
    assert.equal(answer.status, 400);
    assert.equal(answer.error, 'Asset "big.gif" is an image of 65535 × 65535 pixels, over the 100 megapixel limit');
    assert.ok(answer.ms < 1000, `${answer.ms} ms`);
    const metricsAfter = await scrape(`${service.url}/metrics`);
    for (const reason of ['timeout', 'memory', 'crash', 'recycle', 'unresponsive']) {
      assert.equal(delta(metricsBefore.samples, metricsAfter.samples, `typst_pdf_worker_restarts_total{reason="${reason}"}`), 0, reason);
    }
    assert.deepEqual(service.workerPids(), pids);
  });

  it('is told by its bytes, not its name: GIF bytes named .png, and a data: URL', async () => {
    for (const [name, value] of [
      ['logo.png', GIF_BOMB.toString('base64')],
      ['img/any', `data:image/gif;base64,${GIF_BOMB.toString('base64')}`],
    ] as const) {
      const answer = await send(service, {
        data: {},
        template: 'x',
        assets: { 'ok.png': solidPng(2, 2, [9, 9, 9]).toString('base64'), [name]: value },
      });
      assert.equal(answer.status, 400);
      assert.equal(answer.error, `Asset "${name}" is an image of 65535 × 65535 pixels, over the 100 megapixel limit`);
    }
  });

  it('a PNG header of 30000 × 30000 is refused; an image at the limit and a normal one are compiled', async () => {
    const big = await send(service, { data: {}, template: 'x', assets: { 'grey.png': pngHeader(30000, 30000).toString('base64') } });
    assert.equal(big.status, 400);
    assert.equal(big.error, 'Asset "grey.png" is an image of 30000 × 30000 pixels, over the 100 megapixel limit');
    // At the limit the header is let through: Typst then finds the data missing.
    const atLimit = await send(service, {
      data: {},
      template: '#image("edge.png")',
      assets: { 'edge.png': pngHeader(10000, 10000).toString('base64') },
    });
    assert.equal(atLimit.status, 400);
    assert.match(atLimit.error ?? '', /^Typst error on line 1, column 2: /);
    const normal = await send(service, {
      data: {},
      template: '#image("logo.png", width: 2cm)',
      assets: { 'logo.png': solidPng(40, 30, [200, 30, 30]).toString('base64') },
    });
    assert.equal(normal.status, 200, normal.error);
    assert.deepEqual((await parsePdf(normal.bytes!)).images, ['40x30']);
    await assertRecovered(service, WORKERS);
  });
});
