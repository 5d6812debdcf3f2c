/**
 * The HTTP layer alone, through `app.inject` with a stand-in renderer: keys,
 * the rate limit (memory store), body limits and checks, error shapes,
 * health, OpenAPI and draining. Each case takes milliseconds; compiling,
 * workers, signals and Redis are tested against the real service elsewhere.
 * The renderer here stands in for the worker pool only: what is under test
 * is what the HTTP layer answers and what it hands to the renderer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Job } from '../src/bytes/layout.js';
import { buildApp } from '../src/app.js';
import type { JobResult } from '../src/render/job.js';
import { UnavailableError } from '../src/render/errors.js';
import { KeyStore } from '../src/http/keys.js';

const KEY = 'inject-key-0123456789';
const SMALL = 'inject-small-key-0123';
const PDF = Buffer.from('%PDF-1.7\n% stand-in\n%%EOF\n');

/** Answers every job with PDF, or with what `next` says; records what it was handed. */
class StandInRenderer {
  readonly seen: { template: string; data: string; assets: string[] }[] = [];
  next: (() => Promise<JobResult>) | undefined;
  async render({ body, layout }: Job): Promise<JobResult> {
    this.seen.push({
      template: body.toString('utf8', layout.template.start, layout.template.end),
      data: body.toString('utf8', layout.data.start, layout.data.end),
      assets: layout.assets.map((a) => body.toString('utf8', a.name.start, a.name.end)),
    });
    if (this.next) return this.next();
    const none = Buffer.alloc(0);
    return {
      kind: 'pdf',
      pdf: Buffer.from(PDF),
      warnings: none,
      einvoiceWarnings: none,
      compileMs: 1,
      residentBytes: 0,
      engine: '0.11',
      relaid: false,
      longCleanUp: false,
    };
  }
}

let app: FastifyInstance;
let closing = false;
const renderer = new StandInRenderer();

before(async () => {
  app = await buildApp({
    keys: KeyStore.load(`${KEY},${SMALL} name=small limit=2`, undefined),
    renderer,
    fonts: { fonts: () => [] },
    health: {
      stats: () => ({ size: 2, ready: 2, busy: 0, queued: 0, queueLimit: 8, spare: 1 }),
      closing: () => closing,
    },
    logger: pino({ level: 'silent' }),
    compileTimeoutMs: 10_000,
    rateLimit: { limit: 1000, windowMs: 60_000, maxAddresses: 10_000, redisTimeoutMs: 300 },
  });
});
after(async () => {
  await app.close();
});

const generate = (payload: string | Buffer, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/v1/pdf/generate',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    payload,
  });

describe('the HTTP layer (app.inject)', () => {
  it('hands the renderer the body with the places of data, template and assets, and answers its PDF', async () => {
    const res = await generate('{"data": {"n": 1}, "template": "Hi \\u00e9", "assets": {"a.txt": "eA==", "b/c.png": ""}, "x": 1}', {
      'x-request-id': 'req-1',
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/pdf');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['x-request-id'], 'req-1');
    assert.equal(res.headers['x-ratelimit-limit'], '1000');
    assert.deepEqual(res.rawPayload, PDF);
    assert.deepEqual(renderer.seen.at(-1), { template: 'Hi \\u00e9', data: '{"n": 1}', assets: ['a.txt', 'b/c.png'] });
  });

  const refused: [string, string | Buffer, Record<string, string>, number, string | RegExp][] = [
    ['no key', '{}', { authorization: '' }, 401, 'Missing or invalid API Key'],
    ['an unknown key', '{}', { authorization: 'Bearer nope-nope-nope' }, 401, 'Missing or invalid API Key'],
    ['a malformed Authorization', '{}', { authorization: 'Basic abc' }, 401, 'Missing or invalid API Key'],
    ['another content type', '{}', { 'content-type': 'text/plain' }, 415, 'Content-Type must be application/json or multipart/form-data'],
    [
      'a content encoding',
      '{}',
      { 'content-encoding': 'gzip' },
      415,
      'Content-Encoding "gzip" is not supported: send the JSON body uncompressed',
    ],
    ['a declared length over 10 MB', '{}', { 'content-length': String(10 * 1024 * 1024 + 1) }, 413, 'Payload exceeds 10MB limit'],
    ['invalid JSON', '{"data": {}, "template": "x",,}', {}, 400, /^Request body is not valid JSON: .* at line 1, column 30 \(byte 29\)$/],
    ['data missing', '{"template": "x"}', {}, 400, /"data"/],
    ['template not a string', '{"data": {}, "template": 5}', {}, 400, /^Field "template" must be a string/],
    ['an asset name with ..', '{"data": {}, "template": "x", "assets": {"../x": ""}}', {}, 400, /^Asset "\.\.\/x": name must not have/],
  ];
  for (const [name, payload, headers, status, message] of refused) {
    it(`answers ${status} {"error"} for ${name}, without compiling`, async () => {
      const before = renderer.seen.length;
      const res = await generate(payload, headers);
      assert.equal(res.statusCode, status);
      const body = res.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ['error']);
      if (typeof message === 'string') assert.equal(body.error, message);
      else assert.match(String(body.error), message);
      assert.equal(renderer.seen.length, before);
    });
  }

  it('answers 404 {"error"} for an unknown path, with the rate-limit headers', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/nothing', headers: { authorization: `Bearer ${KEY}` }, payload: 'x' });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { error: 'Not found' });
    assert.equal(res.headers['x-ratelimit-limit'], '1000');
  });

  it('gives a key with its own limit 429 past it, with Retry-After, before its body is checked', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await generate('not even JSON', { authorization: `Bearer ${SMALL}` })).statusCode);
    assert.deepEqual(statuses, [400, 400, 429]);
    const res = await generate('{"data": {}, "template": "x"}', { authorization: `Bearer ${SMALL}` });
    assert.equal(res.statusCode, 429);
    assert.deepEqual(res.json(), { error: 'Rate limit exceeded' });
    assert.ok(Number(res.headers['retry-after']) > 0);
    assert.equal(res.headers['x-ratelimit-remaining'], '0');
  });

  it("answers the renderer's 'no capacity' with 503 and Retry-After", async () => {
    renderer.next = () => Promise.reject(new UnavailableError('queue_full'));
    try {
      const res = await generate('{"data": {}, "template": "x"}');
      assert.equal(res.statusCode, 503);
      assert.equal(res.headers['retry-after'], '1');
      assert.deepEqual(res.json(), { error: 'Service temporarily unavailable. Please try again later.' });
    } finally {
      renderer.next = undefined;
    }
  });

  it('serves health, readiness and the OpenAPI document without a key', async () => {
    assert.deepEqual((await app.inject({ url: '/healthz' })).json(), { status: 'ok' });
    const ready = await app.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.equal((ready.json() as { status: string }).status, 'ready');
    const openapi = await app.inject({ url: '/v1/openapi.json' });
    assert.equal(openapi.statusCode, 200);
    assert.equal((openapi.json() as { openapi: string }).openapi, '3.1.0');
  });

  it('while closing, refuses work with 503, Retry-After and Connection: close, and readiness says why', async () => {
    closing = true;
    try {
      const res = await generate('{"data": {}, "template": "x"}');
      assert.equal(res.statusCode, 503);
      assert.equal(res.headers['retry-after'], '1');
      assert.equal(res.headers.connection, 'close');
      const ready = await app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.equal((ready.json() as { reason: string }).reason, 'shutting down');
    } finally {
      closing = false;
    }
  });
});
