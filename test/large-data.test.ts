/**
 * Large `data` through the real service: the server finds where `data`
 * ends from the back of the body and leaves its content to Typst
 * (src/bytes/data-end.ts); when Typst does not read it, the worker checks the
 * body exactly. Every answer must be the one the exact check calls for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../src/api-values.js';
import { errorBody } from '../src/bytes/error-body.js';
import { checkBody, LARGE_DATA_BYTES } from '../src/bytes/json-check.js';
import { parsePdf } from './support/pdf.js';
import { generate, startService, type Service } from './support/service.js';

let service: Service;
before(async () => {
  service = await startService();
});
after(async () => {
  await service.stop();
});

/** About 500 KB of rows: well past the size from which `data` is left to Typst (LARGE_DATA_BYTES). */
const rows = (label: string) => Array.from({ length: 12000 }, (_, i) => ({ id: i, label: `${label} ${i}`, tags: ['a', 'b'] }));
const ROWS_JSON = JSON.stringify({ rows: rows('row') });
const TEMPLATE = '#data.rows.len() rows, the last #data.rows.last().label';

/** The answer the exact check gives a body (as the server gave before data was left to Typst). */
function exactAnswer(body: Buffer): string {
  const check = checkBody(body, { maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS, largeDataBytes: Infinity });
  assert.ok(!check.ok, 'the exact check refuses the body');
  return errorBody(body, check.error).toString();
}

async function textOf(res: Response): Promise<string> {
  assert.equal(res.status, 200, await res.clone().text());
  return (await parsePdf(await res.arrayBuffer())).text.join('\n');
}

describe('large data', () => {
  it('is compiled as sent', async () => {
    const body = Buffer.from(`{"data":${ROWS_JSON},"template":${JSON.stringify(TEMPLATE)}}`);
    assert.ok(body.length > 1.5 * LARGE_DATA_BYTES);
    const res = await generate(service, body);
    assert.equal(res.headers.get('x-typst-version'), '0.11.1');
    assert.equal(await textOf(res), '12000 rows, the last row 11999');
  });

  it('that is not valid JSON gets the 400 of the exact check: where it breaks, line, column and byte', async () => {
    const broken = ROWS_JSON.replace('"row 4000"', '"row 4000",');
    const body = Buffer.from(`{"data":${broken},\n"template":${JSON.stringify(TEMPLATE)}}`);
    const res = await generate(service, body);
    assert.equal(res.status, 400);
    const answer = await res.text();
    assert.equal(answer, exactAnswer(body));
    assert.match(JSON.parse(answer).error, /^Request body is not valid JSON: unexpected character at line 1, column \d+ \(byte \d+\)$/);
  });

  it('with an unpaired surrogate escape is refused as Typst cannot read it', async () => {
    const body = Buffer.from(`{"data":${ROWS_JSON.replace('"row 10"', '"row \\ud800"')},"template":"x"}`);
    const res = await generate(service, body);
    assert.equal(res.status, 400);
    assert.equal(await res.text(), exactAnswer(body));
  });

  it('that is broken is reported before a template that does not parse', async () => {
    const body = Buffer.from(`{"data":${ROWS_JSON.slice(0, -2)}},"template":"#let x = ("}`);
    const res = await generate(service, body);
    assert.equal(res.status, 400);
    assert.equal(await res.text(), exactAnswer(body));
  });

  it('followed by fields the walk from the back does not expect is still found, with the engine they name', async () => {
    // An unknown member holding an array comes after `data`: the server takes its end for data's,
    // Typst cannot read that range, and the worker compiles again with the layout the exact check finds.
    const body = Buffer.from(`{"data":${ROWS_JSON},"typst":"0.14","extra":{"x":[1,2]},"template":${JSON.stringify(TEMPLATE)}}`);
    const res = await generate(service, body);
    assert.equal(res.headers.get('x-typst-version'), '0.14.2');
    assert.equal(await textOf(res), '12000 rows, the last row 11999');
  });

  it('with a bad asset where the walk from the back took it for data gets the 400 naming the asset', async () => {
    const body = Buffer.from(`{"data":${ROWS_JSON},"assets":{"../bad.png":"AAAA"},"extra":{"x":[1]},"template":"x"}`);
    const res = await generate(service, body);
    assert.equal(res.status, 400);
    const answer = await res.text();
    assert.equal(answer, exactAnswer(body));
    assert.match(answer, /\.\.\/bad\.png/);
  });

  it('given twice is the last one, as JSON.parse reads it', async () => {
    const second = JSON.stringify({ rows: rows('second') });
    const body = Buffer.from(`{"data":${ROWS_JSON},"data":${second},"template":${JSON.stringify(TEMPLATE)}}`);
    assert.equal(await textOf(await generate(service, body)), '12000 rows, the last second 11999');
  });

  it('that is valid JSON Typst refuses (a number out of range) gets the same answer as small data does', async () => {
    const template = JSON.stringify(TEMPLATE);
    const large = await generate(service, Buffer.from(`{"data":${ROWS_JSON.replace('"id":5,', '"id":1e400,')},"template":${template}}`));
    const small = await generate(service, Buffer.from(`{"data":{"rows":[{"id":1e400}]},"template":${template}}`));
    assert.equal(large.status, 400);
    assert.equal(small.status, 400);
    const message = (text: string) => (JSON.parse(text) as { error: string }).error.replace(/line \d+,? column \d+/g, 'line L, column C');
    assert.equal(message(await large.text()), message(await small.text()));
  });
});
