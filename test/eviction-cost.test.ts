/**
 * A worker whose clean-ups have grown costly asks to be replaced
 * (src/render/eviction-cost.ts): every eviction of Typst's cache walks a
 * list that keeps the length the longest document gave it, so after one
 * long report each later job, however small, pays for it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { checkBody } from '../src/bytes/json-check.js';
import type { Job } from '../src/bytes/layout.js';
import { TypstEngine } from '../src/render/engine.js';
import { EvictionCost } from '../src/render/eviction-cost.js';
import { loadFontCatalog } from '../src/render/fonts/catalog.js';
import { reportData } from './support/example-data.js';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { scrape } from './support/metrics.js';
import { generate, startService, waitReady, type Service } from './support/service.js';

const REPORT = readFileSync(new URL('../../examples/report.typ', import.meta.url), 'utf8');
/** The 53-page report: its compile leaves comemo's list about a thousand times longer than a one-line page does. */
const LONG_REPORT = JSON.stringify({ data: reportData(2000), template: REPORT });
const RECYCLED = 'typst_pdf_worker_restarts_total{reason="recycle"}';

function jobOf(body: string): Job {
  const bytes = Buffer.from(body);
  const check = checkBody(bytes);
  assert.ok(check.ok);
  return { body: bytes, layout: check.layout };
}

describe("an eviction's walk", () => {
  it('grows after a long document and stays grown for the short ones after it', () => {
    const engine = new TypstEngine('0.11', { fonts: loadFontCatalog() });
    const shortWalk = () => {
      const walks: number[] = [];
      for (let i = 0; i < 5; i++) {
        assert.ok(engine.render(jobOf(JSON.stringify({ data: { i }, template: 'Page #data.i' }))).ok);
        engine.clean();
        walks.push(engine.lastEviction.walkMs);
        assert.equal(engine.lastEviction.evictions, 2);
      }
      return Math.min(...walks);
    };
    const before = shortWalk();
    assert.ok(engine.render(jobOf(LONG_REPORT)).ok);
    engine.clean();
    const afterLong = shortWalk();
    // Measured: 0.002 ms before, 1.6 ms after (the least of five each).
    assert.ok(afterLong > 0.2 && afterLong > 50 * before, `walk ${before} ms before the report, ${afterLong} ms after`);
  });
});

describe('EvictionCost', () => {
  /** An engine as EvictionCost sees it: its last eviction. */
  const engine = () => ({ lastEviction: { walkMs: 0, evictions: 2 } }) as unknown as TypstEngine & { lastEviction: { walkMs: number } };

  it('counts each walk above the least its engine has shown, once per eviction, until a start is paid', () => {
    const cost = new EvictionCost(10);
    const a = engine();
    a.lastEviction.walkMs = 0.1;
    cost.record(a); // the first measure, at the start
    a.lastEviction.walkMs = 1.1;
    cost.record(a); // the lesser of this and the one before: nothing yet
    assert.equal(cost.replacementDue, false);
    for (let i = 0; i < 4; i++) cost.record(a); // 1 ms more, twice a job: 8 ms
    assert.equal(cost.replacementDue, false);
    cost.record(a); // 10 ms
    assert.equal(cost.replacementDue, true);
  });

  it('does not take one slow eviction for a longer list, and keeps engines apart', () => {
    const cost = new EvictionCost(1);
    const a = engine();
    const b = engine();
    a.lastEviction.walkMs = 0.01;
    b.lastEviction.walkMs = 2;
    cost.record(a);
    cost.record(b);
    for (let i = 0; i < 100; i++) {
      // A walk descheduled now and then: 5 ms, between ones of 0.01 ms.
      a.lastEviction.walkMs = i % 10 === 0 ? 5 : 0.01;
      cost.record(a);
      // Another engine whose walks were long from its start: nothing above its own least.
      cost.record(b);
    }
    assert.equal(cost.replacementDue, false);
  });
});

describe('a worker after a long report', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1', WORKER_MAX_JOBS: '0' });
  });
  after(async () => {
    await service.stop();
  });

  const recycled = async () => (await scrape(`${service.url}/metrics`)).samples.get(RECYCLED) ?? 0;
  const shortPage = async (i: number) => {
    const res = await generate(service, { data: { i }, template: 'Page #data.i' });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  };

  it('is kept through short pages alone, and replaced once the report has made their clean-ups cost a start', async () => {
    for (let i = 0; i < 300; i++) await shortPage(i);
    assert.equal(await recycled(), 0, 'a worker replaced without a long document');

    const res = await generate(service, LONG_REPORT);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    // About 3 ms more per page after the report against some 240 ms to start a worker: replaced within about 80 pages.
    let pages = 0;
    while ((await recycled()) === 0 && pages < 600) await shortPage(pages++);
    assert.equal(await recycled(), 1, `not replaced after ${pages} short pages`);
    await waitReady(service, 1);
    await shortPage(0);
  });
});
