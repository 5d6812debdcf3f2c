/**
 * What an afternoon of attacks found, each case against a real server:
 * the error shape of answers Node or Fastify make, bodies refused before
 * they are read, package imports left to Typst, a worker that goes silent,
 * signals sent to the whole process group, and template text details.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { assertRecovered, NO_RATE_LIMIT, send } from '../support/hostile.js';
import { parsePdf } from '../support/pdf.js';
import { open, readAll } from '../support/raw-http.js';
import { generate, logsWritten, MAIN, readiness, startService, TEST_KEY, waitReady, type Service } from '../support/service.js';
import { scrape } from '../support/metrics.js';

/** Sends raw bytes on a fresh connection and reads until the server closes it. */
async function raw(service: Service, bytes: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
  const socket = await open(service);
  const answer = readAll(socket);
  socket.write(bytes);
  return answer;
}

function jsonError(body: string): string {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(parsed), ['error'], body);
  assert.equal(typeof parsed.error, 'string');
  return parsed.error as string;
}

describe('the error contract', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1' });
  });
  after(async () => {
    await service.stop();
  });

  const post = (headers: string, body = '') =>
    `POST /v1/pdf/generate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\n${headers}\r\n${body}`;
  const cases: { name: string; bytes: string; status: number; error: RegExp }[] = [
    {
      name: 'headers over 16 KiB',
      bytes: post(`X-Big: ${'a'.repeat(20_000)}\r\nContent-Length: 2\r\n`, '{}'),
      status: 431,
      error: /^Request headers too large/,
    },
    {
      name: 'over 1,000 header lines',
      bytes: post(`${'X-A: b\r\n'.repeat(1000)}Content-Length: 2\r\n`, '{}'),
      status: 431,
      error: /^Request headers too large \(at most 16 KiB and 1,000 header lines\)$/,
    },
    {
      name: 'Content-Length with Transfer-Encoding',
      bytes: post('Content-Length: 5\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'),
      status: 400,
      error: /Content-Length together with Transfer-Encoding/,
    },
    {
      name: 'Transfer-Encoding with Content-Length after it',
      bytes: post('Transfer-Encoding: chunked\r\nContent-Length: 5\r\n', '0\r\n\r\n'),
      status: 400,
      error: /^Malformed HTTP request: Content-Length together with Transfer-Encoding$/,
    },
    {
      name: 'chunked twice, no Content-Length',
      bytes: post('Transfer-Encoding: chunked, chunked\r\n', '0\r\n\r\n'),
      status: 400,
      error: /^Malformed HTTP request: Transfer-Encoding must end with chunked, given once$/,
    },
    {
      name: 'two Content-Lengths',
      bytes: post('Content-Length: 2\r\nContent-Length: 3\r\n', '{}x'),
      status: 400,
      error: /^Malformed HTTP request: more than one Content-Length$/,
    },
    {
      name: 'two equal Content-Lengths',
      bytes: post('Content-Length: 2\r\nContent-Length: 2\r\n', '{}'),
      status: 400,
      error: /^Malformed HTTP request: more than one Content-Length$/,
    },
    {
      name: 'a negative Content-Length',
      bytes: post('Content-Length: -5\r\n'),
      status: 400,
      error: /^Malformed HTTP request: Content-Length must be one non-negative whole number$/,
    },
    { name: 'a request line that is not HTTP', bytes: 'HELLO THERE\r\n\r\n', status: 400, error: /^Malformed HTTP request$/ },
    {
      name: 'HTTP/1.0 with a body and no Content-Length',
      bytes: `POST /v1/pdf/generate HTTP/1.0\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\n\r\n{"data":{},"template":"x"}`,
      status: 400,
      error: /^An HTTP\/1\.0 request with a body must declare its Content-Length$/,
    },
  ];
  for (const c of cases) {
    it(`answers ${c.name} with ${c.status} and {"error": ...} only, then closes`, async () => {
      const answer = await raw(service, c.bytes);
      assert.equal(answer.status, c.status, answer.headers);
      assert.match(answer.headers, /content-type: application\/json/i);
      assert.match(jsonError(answer.body), c.error);
      await assertRecovered(service, 1);
    });
  }

  for (const [name, body] of [
    ['gzip body', gzipSync(JSON.stringify({ data: {}, template: 'x' }))],
    ['plain body labelled gzip', Buffer.from(JSON.stringify({ data: {}, template: 'x' }))],
  ] as const) {
    it(`refuses a ${name} with 415 naming the encoding`, async () => {
      const answer = await send(service, new Uint8Array(body), { headers: { 'content-encoding': 'gzip' } });
      assert.equal(answer.status, 415);
      assert.equal(answer.error, 'Content-Encoding "gzip" is not supported: send the JSON body uncompressed');
    });
  }

  it('answers an unknown path before the body arrives, and a missing key before it is read', async () => {
    for (const [path, key] of [
      ['/nothing', TEST_KEY],
      ['/v1/pdf/generate', 'wrong-key'],
    ] as const) {
      const status = await new Promise<number>((resolve, reject) => {
        // 10 MB declared, none of it sent: the answer cannot wait for the body.
        const req = request(`${service.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'content-length': 10 * 1024 * 1024 },
        });
        req.on('response', (res) => {
          resolve(res.statusCode!);
          req.destroy();
        });
        req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
        req.flushHeaders();
        setTimeout(() => reject(new Error(`no answer from ${path} without the body`)), 3000).unref();
      });
      assert.equal(status, path === '/nothing' ? 404 : 401);
    }
  });

  it('keeps the meaning of line 1 after a byte order mark, as the Typst CLI does', async () => {
    const res = await generate(service, { data: {}, template: '\ufeff= Heading\nText' });
    assert.equal(res.status, 200);
    assert.deepEqual((await parsePdf(await res.arrayBuffer())).outline, ['Heading']);
    const error = await send(service, { data: {}, template: '\ufeff#nope' });
    assert.equal(error.error, 'Typst error on line 1, column 3: unknown variable: nope', 'columns count the mark, as sent');
  });

  it('blames an unpaired surrogate in the template on the template', async () => {
    const answer = await send(service, '{"data":{},"template":"ok\\n\\ud800"}');
    assert.equal(answer.status, 400);
    assert.equal(
      answer.error,
      'Field "template" contains an unpaired surrogate escape (\\uD800) on line 2, column 1 of the template: Typst text must be valid Unicode',
    );
  });

  it("appends Typst's hints to its message", async () => {
    const answer = await send(service, { data: {}, template: '#let a = 1\n#(a-b)' });
    assert.equal(
      answer.error,
      'Typst error on line 2, column 3: unknown variable: a-b; hint: if you meant to use subtraction, try adding spaces around the minus sign',
    );
  });
});

describe('packages are resolved by Typst, not by a pattern', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1' });
  });
  after(async () => {
    await service.stop();
  });

  it('prose, comments and raw blocks that mention an import compile', async () => {
    for (const template of [
      'To draw, write `#import "@preview/cetz:0.2.2"` at the top.',
      '// #import "@preview/cetz:0.2.2": canvas\nText',
      '```\n#import "@preview/cetz:0.2.2"\n```',
      '#let s = "import \\"@preview/cetz:0.2.2\\""\n#s',
    ]) {
      const answer = await send(service, { data: {}, template });
      assert.equal(answer.status, 200, `${template}: ${answer.error}`);
    }
  });

  it('an import followed by 300,000 spaces is answered at once', async () => {
    const answer = await send(service, { data: {}, template: `#import${' '.repeat(300_000)}"@preview/cetz:0.2.2"` });
    assert.equal(answer.status, 400);
    assert.ok(answer.ms < 3000, `${answer.ms} ms`);
  });

  it('names the package at its line, with any line ends', async () => {
    for (const newline of ['\n', '\r\n', '\r']) {
      const answer = await send(service, { data: {}, template: ['A', 'B', '#import "@preview/cetz:0.2.2": canvas'].join(newline) });
      assert.match(
        answer.error ?? '',
        /^Typst error on line 3, column 9: package @preview\/cetz:0\.2\.2 is not available/,
        JSON.stringify(newline),
      );
    }
  });
});

describe('a worker that goes silent', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1', SPARE_WORKERS: '0' });
  });
  after(async () => {
    await service.stop();
  });

  it('is replaced, and the job it did not take goes to its replacement', async () => {
    const [pid] = service.workerPids();
    process.kill(pid!, 'SIGSTOP');
    try {
      const answer = await send(service, { data: {}, template: 'trivial' });
      assert.equal(answer.status, 200, answer.error);
      assert.ok(answer.ms < 6000, `answered after ${answer.ms} ms`);
    } finally {
      try {
        process.kill(pid!, 'SIGCONT');
      } catch {
        /* killed: as it should be */
      }
    }
    await waitReady(service, 1);
    assert.ok(!service.workerPids().includes(pid!), 'the silent worker is gone');
    const metrics = await scrape(`${service.url}/metrics`);
    assert.equal(metrics.samples.get('typst_pdf_worker_restarts_total{reason="unresponsive"}'), 1);
  });
});

describe('rate limit', () => {
  let service: Service;
  before(async () => {
    service = await startService({ WORKERS: '1', API_KEYS: `${TEST_KEY} name=billing limit=1`, LOG_LEVEL: 'info' });
  });
  after(async () => {
    await service.stop();
  });

  it('counts a 429 under the key name, in the metric and in the log line', async () => {
    assert.equal((await send(service, { data: {}, template: 'x' })).status, 200);
    assert.equal((await send(service, { data: {}, template: 'x' })).status, 429);
    const metrics = await scrape(`${service.url}/metrics`);
    assert.equal(metrics.samples.get('typst_pdf_rate_limited_requests_total{key="billing"}'), 1);
    assert.equal(metrics.samples.get('typst_pdf_rate_limited_requests_total{key="anonymous"}') ?? 0, 0);
    await logsWritten();
    assert.match(service.output(), /"status":429[^\n]*"key":"billing"/);
  });
});

describe('signals to the whole process group', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} (Ctrl-C, a stop of the group) lets the compile in flight finish`, async () => {
      // The service in a process group of its own, as a terminal would start it.
      const child = spawn(process.execPath, [MAIN], {
        env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', API_KEYS: TEST_KEY, WORKERS: '1', SPARE_WORKERS: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
      while (!/listening on (http:\/\/\S+)/.test(output)) await new Promise((r) => setTimeout(r, 50));
      const url = /listening on (http:\/\/\S+)/.exec(output)![1]!;
      const service = { url } as Service;
      const exited = once(child, 'exit');
      const slow = generate(service, { data: {}, template: '#for i in range(2000000) { }\nfinished' });
      await new Promise((r) => setTimeout(r, 400));
      process.kill(-child.pid!, signal);
      const res = await slow;
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal((await parsePdf(await res.arrayBuffer())).text[0], 'finished');
      const [code] = await exited;
      assert.equal(code, 0);
    });
  }
});

describe('readiness', () => {
  it('counts the spare worker apart from the workers', async () => {
    const service = await startService({ WORKERS: '1', SPARE_WORKERS: '1' });
    try {
      for (let i = 0; i < 100 && (await readiness(service)).spare !== 1; i++) await new Promise((r) => setTimeout(r, 50));
      const ready = await readiness(service);
      assert.equal(ready.ready, 1);
      assert.equal(ready.spare, 1);
    } finally {
      await service.stop();
    }
  });
});
