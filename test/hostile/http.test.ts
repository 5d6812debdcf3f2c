/**
 * Malformed and hostile HTTP from a network peer: every case gets the
 * status the API's error table names (or the connection is cut), and right after it a
 * normal request succeeds and the pool is whole.
 *
 * Covered elsewhere: bodies over 10 MB, declared or chunked (test/limits.test.ts).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, record, send, NO_RATE_LIMIT } from '../support/hostile.js';
import { errorOf, head, open, rawRequest } from '../support/raw-http.js';
import { isAlive, startService, TEST_KEY, type Service } from '../support/service.js';

const WORKERS = 2;
let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS) });
});
after(async () => {
  await service.stop();
});

describe('malformed bodies', () => {
  const nested = (depth: number) => `{"data":{"deep":${'['.repeat(depth)}${']'.repeat(depth)}},"template":"#data.deep"}`;
  const cases: { name: string; body: Buffer | string; headers?: Record<string, string | null>; status: number; error: RegExp }[] = [
    { name: 'invalid JSON', body: '{"data": {}, template: "x"}', status: 400, error: /^Request body is not valid JSON/ },
    { name: 'truncated JSON', body: '{"data":{"a":[1,2,3', status: 400, error: /^Request body is not valid JSON/ },
    { name: 'JSON nested 100,000 deep', body: nested(100_000), status: 400, error: /^The request's data could not be read by Typst: / },
    { name: 'JSON nested 100 deep (within what Typst reads)', body: nested(100), status: 200, error: /^$/ },
    {
      name: 'non-UTF-8 bytes',
      body: Buffer.from([...Buffer.from('{"data":{"s":"'), 0xff, 0xfe, 0xc3, ...Buffer.from('"},"template":"x"}')]),
      status: 400,
      error: /^Request body is not valid UTF-8 \(byte 14\)$/,
    },
    {
      name: 'wrong Content-Type',
      body: '{"data":{},"template":"x"}',
      headers: { 'content-type': 'text/plain' },
      status: 415,
      error: /^Content-Type must be application\/json or multipart\/form-data$/,
    },
    {
      name: 'Content-Type missing',
      body: '{"data":{},"template":"x"}',
      headers: { 'content-type': null },
      status: 415,
      error: /^Content-Type must be application\/json or multipart\/form-data$/,
    },
    {
      name: 'Content-Type naming UTF-16',
      body: Buffer.from('{"data":{},"template":"x"}', 'utf16le'),
      headers: { 'content-type': 'application/json; charset=utf-16' },
      status: 415,
      error: /^Content-Type application\/json must be UTF-8: a charset other than utf-8 is not taken$/,
    },
    {
      name: 'Content-Type with a charset that lies',
      body: Buffer.from('{"data":{},"template":"x"}', 'utf16le'),
      headers: { 'content-type': 'application/json; charset=utf-8' },
      status: 400,
      error: /^Request body is not valid JSON/,
    },
    { name: 'empty body', body: '', status: 400, error: /^Request body is empty/ },
    { name: 'JSON that is not an object', body: '[1,2,3]', status: 400, error: /must be a JSON object/ },
    // JSON.parse makes "__proto__" an own property: nothing is polluted, and the field is ignored.
    { name: '__proto__ key', body: '{"data":{},"template":"x","__proto__":{"polluted":true}}', status: 200, error: /^$/ },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.status}`, async (t) => {
      const answer = await rawRequest(service, c.body, c.headers);
      const error = answer.status === 200 ? '' : errorOf(answer);
      record(t, { status: answer.status, ms: answer.ms, error });
      assert.equal(answer.status, c.status, error);
      assert.match(error, c.error);
      await assertRecovered(service, WORKERS);
    });
  }

  it('a 9.9 MB template string -> 200', async (t) => {
    const template = `#let s = "${'y'.repeat(Math.floor(9.9 * 1024 * 1024) - 200)}"\n#s.len()`;
    const answer = await send(service, { data: {}, template });
    record(t, answer);
    assert.equal(answer.status, 200, answer.error);
    await assertRecovered(service, WORKERS);
  });
});

describe('misbehaving clients', () => {
  it('headers then a stall (slowloris) hold no worker: others are served meanwhile', async (t) => {
    const stalled = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const socket = await open(service);
        socket.on('error', () => undefined);
        socket.write(head({ 'content-length': 1000 }));
        socket.write('{"data":');
        return socket;
      }),
    );
    try {
      const started = Date.now();
      for (let i = 0; i < 5; i++) {
        const answer = await send(service, { data: { i }, template: 'served #data.i' });
        assert.equal(answer.status, 200);
      }
      record(t, { status: 200, ms: Date.now() - started });
      await assertRecovered(service, WORKERS);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
  });

  it('a client that disconnects mid-upload leaves nothing behind', async () => {
    for (let i = 0; i < 10; i++) {
      const socket = await open(service);
      socket.on('error', () => undefined);
      socket.write(head({ 'content-length': 2_000_000 }));
      socket.write(`{"data":{"s":"${'z'.repeat(500_000)}`);
      await new Promise((r) => setTimeout(r, 20));
      socket.destroy();
    }
    assert.ok(isAlive(service.process.pid!));
    await assertRecovered(service, WORKERS);
  });

  it('a client that disconnects mid-download (a 31 MB PDF) leaves nothing behind', async (t) => {
    const body = JSON.stringify({ data: {}, template: '#for i in range(100000) [#pagebreak()]' });
    const started = Date.now();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(new URL('/v1/pdf/generate', service.url), {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': Buffer.byteLength(body) },
      });
      req.on('response', (res) => {
        res.once('data', () => {
          req.destroy(); // first chunk received: hang up
          resolve(res.statusCode!);
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ECONNRESET') reject(error);
      });
      req.end(body);
    });
    record(t, { status, ms: Date.now() - started });
    assert.equal(status, 200);
    assert.ok(isAlive(service.process.pid!));
    await assertRecovered(service, WORKERS);
  });

  it('1,000 concurrent connections: each gets 200 or 503, none waits past the limits', async (t) => {
    const started = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        const answer = await rawRequest(service, JSON.stringify({ data: { i }, template: 'n = #data.i' }));
        return answer.status;
      }),
    );
    const counts: Record<number, number> = {};
    for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
    record(t, { status: 200, ms: Date.now() - started, error: `statuses ${JSON.stringify(counts)}` });
    assert.deepEqual(
      Object.keys(counts).filter((s) => s !== '200' && s !== '503'),
      [],
      JSON.stringify(counts),
    );
    assert.ok((counts[200] ?? 0) >= WORKERS, JSON.stringify(counts));
    // Queue wait (10 s) + compile + a margin.
    assert.ok(Date.now() - started < 30_000);
    await assertRecovered(service, WORKERS);
  });
});
