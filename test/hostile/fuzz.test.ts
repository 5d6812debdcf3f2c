/**
 * Property-based fuzzing of the request (fast-check): random JSON bodies,
 * random templates, random header sets. The service never crashes, never
 * answers a status outside the API's error table, and never takes longer than
 * the compile limit plus a margin. FUZZ_SCALE multiplies the case counts
 * (the nightly set runs more).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { assertRecovered, DESIGN_STATUSES, send, NO_RATE_LIMIT } from '../support/hostile.js';
import { rawRequest } from '../support/raw-http.js';
import { isAlive, startService, TEST_KEY, type Service } from '../support/service.js';
import { runs } from '../support/fuzz-scale.js';

const WORKERS = 2;
const TIMEOUT_MS = 3000;
/** The compile limit, a queue wait behind one runaway, the kill and a margin. */
const BOUND_MS = 2 * TIMEOUT_MS + 2000;

let service: Service;
const statuses: Record<number, number> = {};
/** What got a 500: every one is a compiler crash worth a look. */
const crashes: string[] = [];
before(async () => {
  service = await startService({
    ...NO_RATE_LIMIT,
    WORKERS: String(WORKERS),
    COMPILE_TIMEOUT_MS: String(TIMEOUT_MS),
    MAX_WORKER_MEMORY_MB: '512',
    LOG_LEVEL: 'warn',
  });
});
after(async () => {
  await service.stop();
});

function check(status: number, ms: number, what: string): void {
  statuses[status] = (statuses[status] ?? 0) + 1;
  if (status === 500) crashes.push(what);
  assert.ok(DESIGN_STATUSES.has(status), `status ${status} for ${what}`);
  assert.ok(ms < BOUND_MS, `${ms} ms for ${what}`);
  assert.ok(isAlive(service.process.pid!), `the server died on ${what}`);
}

/** Pieces of Typst, so that random templates often parse and do something. */
const typstPiece = fc.constantFrom(
  '#',
  '[',
  ']',
  '{',
  '}',
  '(',
  ')',
  ',',
  ':',
  '=',
  '==',
  '+',
  '*',
  '_',
  '$',
  '"',
  '\n',
  ' ',
  '\\',
  '//',
  '/*',
  '*/',
  '<',
  '>',
  '@',
  '.',
  '..',
  'let',
  'for',
  'in',
  'while',
  'if',
  'else',
  'set',
  'show',
  'import',
  'include',
  'context',
  'return',
  'none',
  'auto',
  'true',
  'data',
  'data.at("x")',
  'x',
  'f(x)',
  '1',
  '1e9',
  '-1',
  'range(10)',
  'text',
  'page',
  'table',
  'heading',
  'pagebreak()',
  'str',
  'repr',
  'calc.pow',
  'image("a.png")',
  'read("/etc/passwd")',
  '"@preview/x:0.1.0"',
  '=',
  '- ',
  '+ ',
  '/ a: b',
);
const template = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 100 }),
  fc.array(typstPiece, { maxLength: 40 }).map((p) => p.join('')),
);
const data = fc.dictionary(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 10 });

describe('fuzzing the request body and headers', () => {
  it(`random JSON values as the body (${runs(600)} cases)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (body) => {
        const text = JSON.stringify(body) ?? 'null';
        const answer = await send(service, text);
        check(answer.status, answer.ms, text.slice(0, 200));
      }),
      { numRuns: runs(600) },
    );
  });

  it(`random templates with random data (${runs(1500)} cases)`, async () => {
    await fc.assert(
      fc.asyncProperty(data, template, async (d, t) => {
        const answer = await send(service, { data: d, template: t });
        check(answer.status, answer.ms, JSON.stringify(t));
        if (answer.status !== 200) assert.equal(typeof answer.error, 'string');
      }),
      { numRuns: runs(1500) },
    );
  });

  it(`random header sets (${runs(500)} cases)`, async () => {
    const name = fc.oneof(
      fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
      fc.constantFrom(
        'content-type',
        'authorization',
        'accept',
        'accept-encoding',
        'content-encoding',
        'expect',
        'x-request-id',
        'origin',
        'cookie',
        'range',
        'if-none-match',
        'x-forwarded-for',
        'upgrade',
      ),
    );
    const value = fc.oneof(
      fc.stringMatching(/^[\x20-\x7e]{0,60}$/).map((s) => s.trim()),
      fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        '',
        `Bearer ${TEST_KEY}`,
        'Bearer wrong',
        'gzip',
        '100-continue',
        'websocket',
        'bytes=0-10',
      ),
    );
    const headers = fc.dictionary(name, value, { maxKeys: 8 });
    await fc.assert(
      fc.asyncProperty(headers, fc.boolean(), async (h, withAuth) => {
        const all: Record<string, string> = withAuth ? { authorization: `Bearer ${TEST_KEY}`, ...h } : { authorization: '', ...h };
        for (const k of ['host', 'content-length', 'transfer-encoding', 'connection']) delete all[k];
        if (!all.authorization) delete all.authorization;
        if (!('content-type' in h)) all['content-type'] = 'application/json';
        const answer = await rawRequest(service, JSON.stringify({ data: { a: 1 }, template: 'x #data.a' }), {
          ...all,
          authorization: all.authorization ?? null,
        });
        check(answer.status, answer.ms, JSON.stringify(h));
      }),
      { numRuns: runs(500) },
    );
  });

  it('the service is whole afterwards', async (t) => {
    t.diagnostic(`statuses seen: ${JSON.stringify(statuses)}`);
    for (const what of crashes) t.diagnostic(`500 for ${what}`);
    await assertRecovered(service, WORKERS);
  });
});
