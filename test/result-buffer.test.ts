/**
 * The buffer the server keeps for each worker's results (src/render/frames.ts,
 * lent through src/render/pool.ts), on a real pool of one worker: a result
 * whose answer is still held keeps its bytes while the worker's next result
 * comes, which gets a buffer of its own; once the first answer's holdings
 * are wiped, the buffer is lent again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkBody } from '../src/bytes/json-check.js';
import type { Job } from '../src/bytes/layout.js';
import type { RenderResult } from '../src/render/job.js';
import { Holdings } from '../src/retention/holdings.js';
import { suitePool } from './support/pool.js';

/** A job of `pages` one-line pages: about 390 bytes of PDF a page. */
function pagesJob(pages: number): Job {
  const body = Buffer.from(JSON.stringify({ data: {}, template: `#for i in range(${pages}) { [#i]; pagebreak() }` }));
  const check = checkBody(body);
  assert.ok(check.ok);
  return { body, layout: check.layout };
}

/** The PDF whole: one its worker holds (32 KiB and more) comes by the pipe when taken without a socket. */
async function pdfOf(result: RenderResult): Promise<Buffer> {
  if (result.kind === 'held') return result.delivery.take();
  assert.equal(result.kind, 'pdf');
  return result.pdf;
}

describe("a worker's result buffer", () => {
  const pool = suitePool(1);

  it('is lent to one answer at a time: a result held keeps its bytes while the next comes', async () => {
    const first = new Holdings();
    const firstPdf = await pdfOf(await pool.render(pagesJob(3000), first));
    const copy = Buffer.from(firstPdf);
    // The next result, as long: read into the same buffer, it would overwrite the first.
    const second = new Holdings();
    const secondPdf = await pdfOf(await pool.render(pagesJob(2990), second));
    assert.ok(firstPdf.equals(copy), 'the first result is intact while its answer is held');
    assert.notEqual(secondPdf.buffer, firstPdf.buffer, 'the second has a buffer of its own');
    first.wipe();
    assert.ok(
      firstPdf.every((byte) => byte === 0),
      'wiped with its answer',
    );
    const third = new Holdings();
    const thirdPdf = await pdfOf(await pool.render(pagesJob(100), third));
    assert.equal(thirdPdf.buffer, firstPdf.buffer, 'given back once wiped: lent again');
    second.wipe();
    third.wipe();
  });

  it('goes back only once the step that uses it has ended, though its answer was wiped before', async () => {
    const held = new Holdings();
    let end!: () => void;
    held.usedUntil(new Promise<void>((resolve) => (end = resolve)));
    const pdf = await pdfOf(await pool.render(pagesJob(3000), held));
    held.wipe();
    const meanwhile = new Holdings();
    const meanwhilePdf = await pdfOf(await pool.render(pagesJob(100), meanwhile));
    assert.notEqual(meanwhilePdf.buffer, pdf.buffer, 'still in use: not lent');
    meanwhile.wipe();
    end();
    await new Promise((resolve) => setImmediate(resolve));
    const next = new Holdings();
    assert.equal((await pdfOf(await pool.render(pagesJob(100), next))).buffer, pdf.buffer, 'lent again once the step ended');
    next.wipe();
  });
});
