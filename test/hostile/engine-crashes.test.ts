/**
 * Templates that crash the Typst engines, against the real service. Text
 * the pre-check knows (bytes/text-runs.ts) is refused with 422 before any
 * compile, the worker untouched; an SVG asset nested deeper than Typst
 * reads, or (on 0.11) drawing an image Typst cannot decode, is Typst's
 * kind of refusal, 400, before the engine sees it; every other crash is a 500 with the one
 * internal message and a replaced worker; while each is answered, another
 * key's request is served. A key whose requests crash the engine more than
 * CRASHES_PER_MINUTE times in its window gets 429 until the window ends,
 * while other keys go on being served.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MESSAGES } from '../../src/messages.js';
import { record, send } from '../support/hostile.js';
import { brokenPng, solidPng } from '../support/png.js';
import { delta, scrape } from '../support/metrics.js';
import { rateLimitHeaders, startService, waitReady, type Service } from '../support/service.js';

const WORKERS = 2;
const CRASHES = 2;
/** Short, so the test sees the refusal end; every request of a case lands well inside one window. */
const WINDOW_MS = 8000;
const CASE_KEYS = Array.from({ length: 40 }, (_, i) => `crash-case-key-${i}`);
const SERVED_KEY = 'served-key-0123456789';
const LIMITED_KEY = 'limited-key-0123456789';
/** The key whose compiles an operator's SIGKILL cuts off: its position makes its name key-43. */
const KILLED_KEY = 'killed-key-0123456789';
const CRASH_RESTARTS = 'typst_pdf_worker_restarts_total{reason="crash"}';
const N = 100_000;

type Engine = '0.11' | '0.14';
interface Case {
  name: string;
  engine: Engine;
  template: string;
  data?: Record<string, unknown>;
  assets?: Record<string, string>;
  status: 200 | 400 | 422 | 500;
  error?: RegExp;
}

const deepXml = Buffer.from('<a>'.repeat(N) + '</a>'.repeat(N)).toString('base64');
/** An SVG whose elements nest `levels` deep, the root and an empty-element tag at the bottom counted. */
const svgOfDepth = (levels: number) =>
  Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9">${'<g>'.repeat(levels - 2)}<rect width="9" height="9"/>${'</g>'.repeat(levels - 2)}</svg>`,
  ).toString('base64');
/** An SVG that draws an image from `href`, and a PNG that cannot be decoded (test/support/png.ts). */
const BROKEN_PNG = brokenPng().toString('base64');
const svgDrawing = (href: string) =>
  Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><image width="9" height="9" href="${href}"/></svg>`).toString(
    'base64',
  );
/** An SVG of `count` different one-pixel PNGs: 0.14's export of 6,000 overflowed its threads' stack, as Rust sizes it. */
const svgOfImages = (count: number) =>
  Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">${Array.from(
      { length: count },
      (_, i) =>
        `<image x="${i % 100}" y="${Math.floor(i / 100)}" width="1" height="1" href="data:image/png;base64,${solidPng(1, 1, [i & 255, i >> 8, 7]).toString('base64')}"/>`,
    ).join('')}</svg>`,
  ).toString('base64');
const SVG_TOO_DEEP = /^Typst error in deep\.svg: failed to parse SVG \(its elements nest more than 1,025 levels deep/;
const SVG_BROKEN_IMAGE = /^Typst error in logo\.svg: an image inside the SVG cannot be decoded: failed to decode image/;
const TEXT = /^The template has a run of more than 65,535 bytes of text with no space or line break/;
const DATA = /^A string in "data" has a run of more than 65,535 bytes/;
const MARKS = /^The template has a character with more than 32,767 combining marks/;

const CASES: Case[] = [
  // Refused by the pre-check: 422 before any compile.
  ...(['0.11', '0.14'] as const).map(
    (engine): Case => ({ name: 'é × 32,768', engine, template: 'é'.repeat(32768), status: 422, error: TEXT }),
  ),
  { name: 'Arabic × 32,768', engine: '0.14', template: 'ب'.repeat(32768), status: 422, error: TEXT },
  { name: '10,000 ZWJ-joined emoji', engine: '0.11', template: Array(10000).fill('👨').join('\u200d'), status: 422, error: TEXT },
  { name: '70,000 combining marks', engine: '0.14', template: `a${'\u0301'.repeat(70000)}`, status: 422, error: MARKS },
  { name: 'U+00A0 × 32,768', engine: '0.14', template: '\u00a0'.repeat(32768), status: 422, error: TEXT },
  { name: 'U+00AD × 32,768', engine: '0.11', template: '\u00ad'.repeat(32768), status: 422, error: TEXT },
  { name: 'é × 32,768 from data', engine: '0.11', template: '#data.s', data: { s: 'é'.repeat(32768) }, status: 422, error: DATA },
  // Beyond a check of the request's bytes: the worker crashes (500) and is replaced.
  { name: 'é × 32,768 made by the template', engine: '0.14', template: '#("é" * 32768)', status: 500 },
  { name: '( 100,000 deep', engine: '0.11', template: `#${'('.repeat(N)}1${')'.repeat(N)}`, status: 500 },
  { name: '{ 100,000 deep', engine: '0.14', template: `#${'{'.repeat(N)}${'}'.repeat(N)}`, status: 500 },
  { name: 'unary - 100,000 deep', engine: '0.11', template: `#(${'-'.repeat(N)}1)`, status: 500 },
  { name: 'not 100,000 deep', engine: '0.11', template: `#(${'not '.repeat(N)}true)`, status: 500 },
  {
    name: 'unary - and not 100,000 deep (0.14 evaluates them in a loop)',
    engine: '0.14',
    template: `#(${'-'.repeat(N)}1) #(${'not '.repeat(N)}true)`,
    status: 200,
  },
  { name: 'math ( 100,000 deep', engine: '0.14', template: `$${'('.repeat(N)}${')'.repeat(N)}$`, status: 500 },
  { name: '( 100,000 deep inside eval', engine: '0.11', template: `#eval("${'('.repeat(N)}1${')'.repeat(N)}")`, status: 500 },
  ...(['0.11', '0.14'] as const).flatMap((engine): Case[] => [
    { name: 'duration(weeks: 2^63 - 1)', engine, template: '#duration(weeks: 9223372036854775807)', status: 500 },
    { name: 'table.cell(rowspan: 2^63 - 1)', engine, template: '#table(table.cell(rowspan: 9223372036854775807)[x])', status: 500 },
  ]),
  { name: 'calc.rem(-2^63, -1)', engine: '0.11', template: '#calc.rem(-9223372036854775807 - 1, -1)', status: 500 },
  { name: 'calc.rem(-2^63, -1)', engine: '0.14', template: '#calc.rem(-9223372036854775807 - 1, -1)', status: 200 },
  { name: 'xml() of 100,000 nested elements', engine: '0.14', template: '#xml("deep.xml")', assets: { 'deep.xml': deepXml }, status: 500 },
  { name: 'xml() of 100,000 nested elements', engine: '0.11', template: '#xml("deep.xml")', assets: { 'deep.xml': deepXml }, status: 500 },
  // SVG assets, looked at before the compile (render/svg-check.ts): what would crash is Typst's kind of refusal, 400.
  ...(['0.11', '0.14'] as const).flatMap((engine): Case[] => [
    {
      name: 'an SVG nested 100,000 deep',
      engine,
      template: '#image("deep.svg")',
      assets: { 'deep.svg': svgOfDepth(N) },
      status: 400,
      error: SVG_TOO_DEEP,
    },
    {
      name: 'an SVG nested 1,026 deep',
      engine,
      template: '#image("deep.svg")',
      assets: { 'deep.svg': svgOfDepth(1026) },
      status: 400,
      error: SVG_TOO_DEEP,
    },
    { name: 'an SVG nested 1,025 deep', engine, template: '#image("deep.svg")', assets: { 'deep.svg': svgOfDepth(1025) }, status: 200 },
  ]),
  ...(['0.11', '0.14'] as const).map(
    (engine): Case => ({
      name: 'an SVG of 10,000 images',
      engine,
      template: '#image("many.svg")',
      assets: { 'many.svg': svgOfImages(10_000) },
      status: 200,
    }),
  ),
  {
    name: 'an SVG drawing a PNG it cannot decode, from a data: URL',
    engine: '0.11',
    template: '#image("logo.svg")',
    assets: { 'logo.svg': svgDrawing(`data:image/png;base64,${BROKEN_PNG}`) },
    status: 400,
    error: SVG_BROKEN_IMAGE,
  },
  {
    name: 'an SVG drawing a PNG asset it cannot decode',
    engine: '0.11',
    template: '#image("logo.svg")',
    assets: { 'logo.svg': svgDrawing('p.png'), 'p.png': BROKEN_PNG },
    status: 400,
    error: SVG_BROKEN_IMAGE,
  },
];

/** Resolves once a worker has been compiling for a moment (the pool's gauge of busy workers). */
async function compiling(service: Service): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await scrape(`${service.url}/metrics`)).samples.get('typst_pdf_workers_busy') !== 1) {
    assert.ok(Date.now() < deadline, 'no worker took the job');
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 200));
}

const CRASH = { data: {}, template: '#duration(weeks: 9223372036854775807)' };
const NORMAL = { data: { n: 7 }, template: 'Served #data.n' };

let service: Service;
before(async () => {
  service = await startService({
    API_KEYS: [...CASE_KEYS, SERVED_KEY, LIMITED_KEY, KILLED_KEY].join(','),
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
    CRASHES_PER_MINUTE: String(CRASHES),
    WORKERS: String(WORKERS),
    SPARE_WORKERS: '1',
  });
});
after(async () => {
  await service.stop();
});

describe('templates that crash the engines', () => {
  CASES.forEach((c, i) => {
    it(`${c.name} on ${c.engine} -> ${c.status}, another key served meanwhile`, async (t) => {
      assert.ok(i < CASE_KEYS.length);
      await waitReady(service, WORKERS);
      const before = (await scrape(`${service.url}/metrics`)).samples;
      const [answer, other] = await Promise.all([
        send(service, { data: c.data ?? {}, template: c.template, assets: c.assets, typst: c.engine }, { key: CASE_KEYS[i]! }),
        send(service, NORMAL, { key: SERVED_KEY }),
      ]);
      record(t, answer);
      const after = (await scrape(`${service.url}/metrics`)).samples;
      assert.equal(answer.status, c.status, answer.error);
      assert.equal(answer.headers.get('x-typst-version')?.slice(0, 4), c.status === 500 ? undefined : c.engine);
      if (c.status === 500) assert.equal(answer.error, MESSAGES.internal);
      if (c.error) assert.match(answer.error ?? '', c.error);
      assert.equal(delta(before, after, CRASH_RESTARTS), c.status === 500 ? 1 : 0, 'workers replaced after a crash');
      assert.equal(other.status, 200, `the other key: ${other.status} ${other.error ?? ''}`);
    });
  });
});

describe('the text pre-check on a body whose data is left to Typst (over 256 KiB)', () => {
  const padding = Array.from({ length: 4000 }, (_, i) => `row ${i} `.repeat(10));

  it('a run in data -> 422 before any compile', async (t) => {
    const answer = await send(service, { data: { rows: padding, s: 'é'.repeat(32768) }, template: '#data.s' }, { key: SERVED_KEY });
    record(t, answer);
    assert.equal(answer.status, 422);
    assert.match(answer.error ?? '', DATA);
  });

  it('a run in data that is not valid JSON -> the 400 the exact check words', async (t) => {
    const body = JSON.stringify({ data: { rows: padding, s: 'é'.repeat(32768) }, template: '#data.s' }).replace('"row 0 ', '"row 0 \\x');
    const answer = await send(service, body, { key: SERVED_KEY });
    record(t, answer);
    assert.equal(answer.status, 400);
    assert.match(answer.error ?? '', /^Request body is not valid JSON: invalid escape/);
  });
});

describe(`the crash limit (CRASHES_PER_MINUTE=${CRASHES}, a ${WINDOW_MS} ms window)`, () => {
  it('refuses a key past its crashes with 429 until its window ends, and serves the others meanwhile', async () => {
    await waitReady(service, WORKERS);
    // Each crash is answered as ever, up to and past the limit: the limit is for the requests that follow.
    const crashes = [];
    for (let n = 0; n <= CRASHES; n++) crashes.push(await send(service, CRASH, { key: LIMITED_KEY }));
    assert.deepEqual(
      crashes.map((a) => a.status),
      Array(CRASHES + 1).fill(500),
    );
    const window = rateLimitHeaders(new Response(null, { headers: crashes[0]!.headers })).reset;
    assert.ok(
      crashes.every((a) => Number(a.headers.get('x-ratelimit-reset')) === window),
      'every crash in one window',
    );

    const before = (await scrape(`${service.url}/metrics`)).samples;
    const refused = await send(service, NORMAL, { key: LIMITED_KEY });
    assert.equal(refused.status, 429);
    assert.equal(refused.error, MESSAGES.crashLimited);
    assert.equal(Number(refused.headers.get('x-ratelimit-reset')), window);
    assert.ok(refused.headers.get('x-ratelimit-limit'));
    const retryAfter = Number(refused.headers.get('retry-after'));
    // Never past the window: it counts from the window's own end, not from X-RateLimit-Reset's whole second.
    assert.ok(retryAfter >= 1 && retryAfter <= Math.ceil(WINDOW_MS / 1000), `Retry-After ${retryAfter}`);
    const other = await send(service, NORMAL, { key: SERVED_KEY });
    assert.equal(other.status, 200);
    const after = (await scrape(`${service.url}/metrics`)).samples;
    assert.equal(delta(before, after, 'typst_pdf_crash_limited_requests_total{key="key-42"}'), 1);
    assert.equal(delta(before, after, 'typst_pdf_rate_limited_requests_total{key="key-42"}'), 0, 'not counted as the rate limit');

    // The window ends: the key is served again.
    await new Promise((r) => setTimeout(r, Math.max(0, window * 1000 - Date.now()) + 50));
    const again = await send(service, NORMAL, { key: LIMITED_KEY });
    assert.equal(again.status, 200, again.error);
    assert.ok(Number(again.headers.get('x-ratelimit-reset')) > window);
  });

  it("does not count a worker killed from outside (a SIGKILL the pool did not send) as the key's crash", async () => {
    const before = (await scrape(`${service.url}/metrics`)).samples;
    const slow = { data: {}, template: '#let n = 0\n#for i in range(20000000) { n += 1 }\n#n' };
    let killed = 0;
    for (let n = 0; n <= CRASHES; n++) {
      await waitReady(service, WORKERS);
      const cut = send(service, slow, { key: KILLED_KEY });
      // Killed once a worker compiles it (on a loaded machine the job can reach one later than any fixed wait).
      await compiling(service);
      // An operator (or anything but the kernel's out-of-memory killer) ends every worker, spares too.
      for (const pid of service.workerPids()) {
        process.kill(pid, 'SIGKILL');
        killed++;
      }
      const answer = await cut;
      assert.equal(answer.status, 500);
      assert.equal(answer.error, MESSAGES.internal);
    }
    await waitReady(service, WORKERS);
    const served = await send(service, NORMAL, { key: KILLED_KEY });
    assert.equal(served.status, 200, served.error);
    const after = (await scrape(`${service.url}/metrics`)).samples;
    assert.equal(delta(before, after, CRASH_RESTARTS), 0);
    assert.equal(delta(before, after, 'typst_pdf_worker_restarts_total{reason="killed"}'), killed);
    assert.equal(delta(before, after, 'typst_pdf_crash_limited_requests_total{key="key-43"}'), 0);
  });
});
