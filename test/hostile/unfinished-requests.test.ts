/**
 * Requests that never finish, from a key holder: bodies that stop, that
 * half-close, that lie about their framing, that wait on `100 Continue`,
 * and many of them at once. Each ends: answered with the status the API
 * gives it, or dropped at once, with its connection closed, its buffer
 * released and the request counted; meanwhile others are served. (That
 * nothing of them stays in memory is test/retention.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { scrape } from '../support/metrics.js';
import { errorOf, head, open, readAll, type RawResponse, sendWhileAnswered } from '../support/raw-http.js';
import { generate, startService, TEST_KEY, type Service } from '../support/service.js';
import { NO_RATE_LIMIT, rssMb } from '../support/hostile.js';
import { MESSAGES } from '../../src/messages.js';

const BODY_TIMEOUT_MS = 1000;
/** Bodies being received at once, in MiB: four 10 MB bodies and a bit; a key's share (half) holds two. */
const PENDING_BODIES_MB = 45;
/** Two more keys, for the share of the bound each key has. */
const OTHER_KEYS = ['other-key-0123456789', 'third-key-0123456789'] as const;

let service: Service;
before(async () => {
  service = await startService({
    ...NO_RATE_LIMIT,
    BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
    MAX_PENDING_BODIES_MB: String(PENDING_BODIES_MB),
    API_KEYS: [TEST_KEY, ...OTHER_KEYS].join(','),
  });
});
after(async () => {
  await service.stop();
});

/** Opens a connection, writes `parts` one after the other, and reads until the server closes it. */
async function exchange(...parts: (string | Buffer)[]): Promise<RawResponse> {
  const socket = await open(service);
  const answer = readAll(socket);
  for (const part of parts) socket.write(part);
  return answer;
}

async function assertServed(): Promise<void> {
  const res = await generate(service, { data: {}, template: 'still serving' });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
}

const abandoned = async () =>
  (await scrape(`${service.url}/metrics`)).samples.get('typst_pdf_http_requests_abandoned_total{route="/v1/pdf/generate"}') ?? 0;

describe('a body that stops', () => {
  for (const how of ['FIN', 'RST'] as const) {
    it(`is dropped at once when the client's ${how} comes mid-body, and counted`, async () => {
      const before = await abandoned();
      const socket = await open(service);
      const answer = readAll(socket);
      socket.write(head({ 'content-length': 1_000_000 }));
      socket.write(Buffer.alloc(500_000, 0x20));
      await sleep(200);
      if (how === 'FIN') socket.end();
      else socket.resetAndDestroy();
      const res = await answer;
      assert.equal(res.status, 0, 'no answer');
      assert.ok(res.ms < 1000 + 200, `closed at once (${res.ms} ms)`);
      await sleep(100);
      assert.equal(await abandoned(), before + 1, 'counted as abandoned');
      await assertServed();
    });
  }

  for (const [name, body] of [
    ['no byte of it', ''],
    ['part of it, then silence', '{"data":{"a":1},"templ'],
  ] as const) {
    it(`gets 408 after the body timeout: ${name}`, async () => {
      const res = await exchange(head({ 'content-length': 1_000_000 }), body);
      assert.equal(res.status, 408);
      assert.equal(errorOf(res), 'Request body not received within 1 seconds');
      assert.match(res.headers, /^connection: close$/im);
      assert.ok(res.ms >= BODY_TIMEOUT_MS && res.ms < BODY_TIMEOUT_MS + 2000, `answered after the timeout (${res.ms} ms)`);
    });
  }

  it('gets 408 when a byte now and then keeps it alive past twice the body timeout', async () => {
    const socket = await open(service);
    const answer = readAll(socket);
    socket.write(head({ 'content-length': 1_000_000 }));
    const trickle = setInterval(() => socket.writable && socket.write(' '), BODY_TIMEOUT_MS / 4);
    const res = await answer;
    clearInterval(trickle);
    assert.equal(res.status, 408);
    assert.equal(errorOf(res), 'The request was not received in time');
    // Node checks every quarter of the body timeout, for a whole request of twice the body timeout.
    assert.ok(res.ms >= 2 * BODY_TIMEOUT_MS && res.ms < 2 * BODY_TIMEOUT_MS + 3000, `cut off (${res.ms} ms)`);
  });
});

describe('a body that never comes after its request was refused', () => {
  for (const [name, headers] of [
    ['401, a wrong key', { authorization: 'Bearer wrong-key', 'content-length': 1000 }],
    ['413, a declared length over the limit', { 'content-length': 11 * 1024 * 1024 }],
  ] as const) {
    it(`gets its one answer, and its connection closes when the time for the request runs out: ${name}`, async () => {
      // Kept alive: Node reads the rest of the body after the answer, as it would for the next request.
      const res = await exchange(head({ ...headers, connection: null }));
      assert.equal(res.status, Number(name.slice(0, 3)));
      assert.doesNotMatch(res.body, /HTTP\/1\.1/, 'a second answer to the same request');
      assert.ok(res.ms >= 2 * BODY_TIMEOUT_MS && res.ms < 2 * BODY_TIMEOUT_MS + 3000, `closed (${res.ms} ms)`);
      await assertServed();
    });
  }
});

describe('a client that half-closes once its request is whole', () => {
  it('gets its answer, then the connection closes', async () => {
    const body = JSON.stringify({ data: { n: 7 }, template: 'half-closed #data.n' });
    const socket = await open(service);
    const answer = readAll(socket);
    // Kept alive as far as the request says: the client's end alone closes it, once answered.
    socket.end(head({ 'content-length': Buffer.byteLength(body), connection: null }) + body);
    const res = await answer;
    assert.equal(res.status, 200);
    assert.match(res.headers, /^connection: close$/im);
    assert.match(res.headers, /^content-type: application\/pdf$/im);
    assert.equal(Buffer.byteLength(res.body, 'latin1'), Number(/^content-length: (\d+)$/im.exec(res.headers)?.[1]));
    assert.ok(res.body.startsWith('%PDF-') && res.body.trimEnd().endsWith('%%EOF'));
  });

  it('gets an answer to each request it sent before its end, in order', async () => {
    const body = JSON.stringify({ data: {}, template: 'first' });
    const socket = await open(service);
    const answer = readAll(socket);
    socket.write(head({ 'content-length': Buffer.byteLength(body), connection: null }) + body);
    socket.end(`${head({ authorization: null, connection: null, 'content-length': 2 })}{}`);
    const res = await answer;
    assert.equal(res.status, 200);
    // The first keeps the connection for the second, after which it closes.
    assert.match(res.headers, /^connection: keep-alive$/im);
    assert.match(res.body, /HTTP\/1\.1 401 Unauthorized\r\n/);
  });
});

describe('a malformed chunked body', () => {
  const chunked = head({ 'content-length': null, 'transfer-encoding': 'chunked' });
  for (const [name, framing] of [
    ['a chunk size that is not hexadecimal', '5\r\n{"dat\r\nzz\r\nab\r\n'],
    ['a negative chunk size', '-1\r\nab\r\n'],
    ['a chunk longer than its size', '3\r\n{"data":{}}\r\n0\r\n\r\n'],
    ['chunk lines ended by LF alone', '5\n{"dat\n'],
  ] as const) {
    it(`gets a JSON 400 and its connection closed: ${name}`, async () => {
      const res = await exchange(chunked, framing);
      assert.equal(res.status, 400);
      assert.equal(errorOf(res), MESSAGES.badChunks);
      assert.match(res.headers, /^connection: close$/im);
      assert.ok(res.ms < BODY_TIMEOUT_MS, `answered at once (${res.ms} ms)`);
    });
  }

  it('is not what a head with a CR or LF alone in a header is called: that is only malformed', async () => {
    for (const lone of ['\r', '\n']) {
      const res = await exchange(`GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: a${lone}b\r\n\r\n`);
      assert.equal(res.status, 400);
      assert.equal(errorOf(res), MESSAGES.malformedHttp, JSON.stringify(lone));
    }
  });

  it('gets 501 before it is read when it names a transfer coding besides chunked', async () => {
    const res = await exchange(head({ 'content-length': null, 'transfer-encoding': 'gzip, chunked' }), '2\r\n{}\r\n0\r\n\r\n');
    assert.equal(res.status, 501);
    assert.equal(
      errorOf(res),
      'Transfer-Encoding "gzip, chunked" is not supported: send the body chunked or with a Content-Length, uncompressed',
    );
  });
});

describe('Expect: 100-continue', () => {
  const expecting = (headers: Record<string, string | number | null>) => head({ 'content-length': 26, expect: '100-continue', ...headers });

  for (const [name, headers, status] of [
    ['without a key', { authorization: null }, 401],
    ['with a wrong key', { authorization: 'Bearer not-the-key-0123456789' }, 401],
    ['declaring 20 MB', { 'content-length': 20 * 1024 * 1024 }, 413],
    ['with a type other than JSON', { 'content-type': 'text/plain' }, 415],
  ] as const) {
    it(`is answered ${status} instead of 100 Continue ${name}, and its connection closed`, async () => {
      const socket = await open(service);
      const answer = readAll(socket);
      socket.write(expecting(headers));
      const res = await answer;
      assert.equal(res.status, status);
      assert.doesNotMatch(res.headers, /100 Continue/);
      assert.match(res.headers, /^connection: close$/im);
    });
  }

  it('gets 100 Continue once the checks before the body have passed, then its PDF', async () => {
    const socket = await open(service);
    let seen = '';
    const interim = new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        seen += chunk.toString('latin1');
        if (seen.includes('\r\n\r\n')) resolve();
      }),
    );
    const answer = readAll(socket);
    socket.write(expecting({}));
    await interim;
    assert.match(seen, /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    socket.write('{"data":{},"template":"x"}');
    const res = await answer;
    assert.equal(res.status, 200);
  });
});

describe('what Node answers on its own', () => {
  it('an HTTP/1.1 request without Host gets the JSON 400', async () => {
    const res = await exchange(`GET /healthz HTTP/1.1\r\n\r\n`);
    assert.equal(res.status, 400);
    assert.equal(errorOf(res), 'Malformed HTTP request: an HTTP/1.1 request must have a Host header');
    // Under /v1 it is counted first, as every request is, and says so.
    const api = await exchange(head({ host: null, 'content-length': 2 }), '{}');
    assert.equal(api.status, 400);
    assert.match(api.headers, /^x-ratelimit-remaining: \d+$/im);
  });

  it('a request with two Host headers gets the JSON 400 (Node keeps the first)', async () => {
    const res = await exchange(`GET /healthz HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n`);
    assert.equal(res.status, 400);
    assert.equal(errorOf(res), 'Malformed HTTP request: more than one Host header');
    assert.equal((await exchange(`GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`)).status, 200);
  });

  it('a request with two Content-Type or two Authorization headers gets the JSON 400 (Node keeps the first)', async () => {
    const body = '{"data":{},"template":"x"}';
    for (const [name, second] of [
      ['Content-Type', 'content-type: text/plain'],
      ['Authorization', 'AUTHORIZATION: Bearer other-key'],
    ] as const) {
      const request = head({ 'content-length': body.length }).replace('\r\n\r\n', `\r\n${second}\r\n\r\n`);
      const res = await exchange(request, body);
      assert.equal(res.status, 400, name);
      assert.equal(errorOf(res), `Malformed HTTP request: more than one ${name} header`);
    }
    // A header of the same length is another header; one of them named in another case is the same.
    const alike = head({ 'content-length': body.length, 'content-typo': 'x', authorization: null }).replace(
      '\r\n\r\n',
      `\r\nAuthorizatioN: Bearer ${TEST_KEY}\r\n\r\n`,
    );
    assert.equal((await exchange(alike, body)).status, 200);
  });

  it('a request line of HTTP/2.0 gets the JSON 505 (Node would serve it as HTTP/1.1)', async () => {
    const res = await exchange(`GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n`);
    assert.equal(res.status, 505);
    assert.equal(errorOf(res), 'HTTP version not supported: this service speaks HTTP/1.1 (and 1.0)');
    assert.equal((await exchange(`GET /healthz HTTP/1.0\r\n\r\n`)).status, 200);
  });

  it('a path whose percent-encoding cannot be decoded gets the JSON 400 with the headers of every answer', async () => {
    const res = await fetch(`${service.url}/v1/pdf/%zz`);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'Malformed URL' });
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('CONNECT gets a JSON 501', async () => {
    const res = await exchange(`CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n`);
    assert.equal(res.status, 501);
    assert.equal(errorOf(res), 'This service does not support the CONNECT method');
  });
});

describe('an answer that closes its connection before the body is in', () => {
  const length = 8 * 1024 * 1024;
  for (const [name, text, status] of [
    [
      'a refused Expect: 100-continue',
      head({ authorization: null, connection: null, expect: '100-continue', 'content-length': length }),
      401,
    ],
    ['an HTTP/1.0 request', head({ authorization: null, connection: null, 'content-length': length }).replace('HTTP/1.1', 'HTTP/1.0'), 401],
    ['an HTTP/1.1 request without Host', head({ host: null, connection: null, 'content-length': length }), 400],
  ] as const) {
    it(`lets a client still sending its body read it, on the API's own path: ${name}`, async () => {
      const { received, reset } = await sendWhileAnswered(await open(service), text, length);
      assert.equal(reset, false, 'the server reset the connection');
      assert.match(received, new RegExp(`^HTTP/1\\.[01] ${status} `));
      assert.match(received, /^connection: close\r$/im);
    });
  }

  it('is ended at once when its client goes on sending bytes that cannot be parsed', async () => {
    const { hostname, port } = new URL(service.url);
    // Half-open allowed: the client goes on writing after the server's FIN, so only the server's end of it closes it.
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    await once(socket, 'connect');
    const answer = readAll(socket);
    socket.write('POST /nowhere HTTP/1.1\r\nhost: localhost\r\ntransfer-encoding: chunked\r\n\r\n');
    await once(socket, 'data');
    // Not chunk framing: each read of it is a parse error, and each error ended the connection again.
    const junk = Buffer.alloc(1024, 0x7a);
    const started = Date.now();
    while (!socket.destroyed && Date.now() - started < 3000) {
      socket.write(junk);
      await sleep(2);
    }
    const res = await Promise.race([answer, sleep(1000).then(() => undefined)]);
    socket.destroy();
    assert.ok(res, `the server still held the connection ${Date.now() - started} ms after the first bytes it could not parse`);
    assert.equal(res.status, 404);
    assert.doesNotMatch(service.output(), /MaxListenersExceeded/);
    await assertServed();
  });
});

describe('bodies being received, in total', () => {
  const declared = 9_990_000;

  /** Opens a connection that declares about 10 MB with `key` and sends a little of it. */
  async function holdBody(key: string): Promise<{ socket: Socket; answer: Promise<RawResponse> }> {
    const socket = await open(service);
    const answer = readAll(socket);
    socket.write(head({ 'content-length': declared, authorization: `Bearer ${key}` }));
    socket.write('{"data":');
    await sleep(50);
    return { socket, answer };
  }

  /** The answer of a body refused before it was read: 503 with Retry-After, well before its body timeout. */
  async function assertRefused(answer: Promise<RawResponse>, which: string): Promise<void> {
    const refused = await Promise.race([answer, sleep(BODY_TIMEOUT_MS / 2).then(() => undefined)]);
    assert.ok(refused, `${which} was answered before its body timeout`);
    assert.equal(refused.status, 503, which);
    assert.match(refused.headers, /^retry-after: \d+$/im);
  }

  /**
   * Whether each of the bodies has had no answer within a little while: they are being received. (Each such body
   * times out a second after its last byte: a test's steps fit well within that.)
   */
  async function assertReceiving(held: { answer: Promise<RawResponse> }[], what: string): Promise<void> {
    const waited = sleep(100).then(() => undefined);
    const answers = await Promise.all(held.map(({ answer }) => Promise.race([answer, waited])));
    assert.deepEqual(
      answers.map((answer) => answer?.status),
      held.map(() => undefined),
      what,
    );
  }

  it('past MAX_PENDING_BODIES_MB, a new body gets 503 with Retry-After before it is read, and others are served', async () => {
    // Two keys hold two bodies of about 10 MB each: the bound holds four, and a third key's is refused.
    const holders = [];
    for (const key of [TEST_KEY, TEST_KEY, OTHER_KEYS[0], OTHER_KEYS[0]]) holders.push(await holdBody(key));
    const fifth = await holdBody(OTHER_KEYS[1]);
    await assertRefused(fifth.answer, 'the fifth');
    await assertReceiving(holders, 'the bound holds four');
    const started = Date.now();
    const health = await fetch(`${service.url}/healthz`);
    assert.equal(health.status, 200);
    assert.ok(Date.now() - started < 1000, 'health answers while bodies are held');
    for (const { socket } of holders) socket.destroy();
    await assertServed();
  });

  it("one key's bodies take at most half of it: its next body gets 503, and another key's are let in", async () => {
    const own = [await holdBody(TEST_KEY), await holdBody(TEST_KEY)];
    const third = await holdBody(TEST_KEY);
    await assertRefused(third.answer, "the key's third");
    const other = await holdBody(OTHER_KEYS[0]);
    await assertReceiving([...own, other], "the key's first two, and another key's body");
    // The key's bodies gone, its share is free again.
    for (const { socket } of own) socket.destroy();
    await sleep(50);
    const again = await holdBody(TEST_KEY);
    await assertReceiving([again], 'the key is let in again once its bodies are gone');
    again.socket.destroy();
    other.socket.destroy();
    await assertServed();
  });

  it("many large bodies that are dropped leave the server's memory near where it was", async () => {
    const pid = service.process.pid!;
    const rssBefore = rssMb(pid);
    const body = Buffer.alloc(9_900_000, 0x20);
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        const socket = await open(service);
        const answer = readAll(socket);
        socket.write(head({ 'content-length': 9_990_000 }));
        socket.write(body);
        await sleep(300);
        socket.end();
        await answer;
      }),
    );
    await sleep(500);
    const rssAfter = rssMb(pid);
    assert.ok(rssAfter - rssBefore < 100, `server RSS ${rssBefore} -> ${rssAfter} MiB`);
    await assertServed();
  });
});

describe('shutdown', () => {
  it('does not wait for requests whose body never came', async () => {
    const own = await startService({ BODY_TIMEOUT_MS: '30000', SHUTDOWN_TIMEOUT_MS: '25000' });
    const { hostname, port } = new URL(own.url);
    const sockets = await Promise.all(
      Array.from(
        { length: 3 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(Number(port), hostname, () => resolve(socket));
          }),
      ),
    );
    const answers = sockets.map((socket) => readAll(socket));
    for (const socket of sockets) socket.write(`${head({ 'content-length': 1_000_000 })}{"data":`);
    await sleep(200);
    const started = Date.now();
    assert.equal(await own.stop('SIGTERM'), 0);
    assert.ok(Date.now() - started < 5000, `stopped in ${Date.now() - started} ms`);
    for (const res of await Promise.all(answers)) assert.ok(res.status === 503 || res.status === 0, `answered ${res.status}`);
  });

  it('does not wait for a connection reading the rest of an answered request, nor a kept-alive one whose body never came', async () => {
    const own = await startService({ BODY_TIMEOUT_MS: '30000', SHUTDOWN_TIMEOUT_MS: '25000' });
    const { hostname, port } = new URL(own.url);
    const requests = [
      // A path the service does not have: answered 404 with Connection: close, the connection then reads the body to come.
      'POST /nowhere HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000000\r\n\r\n',
      // No key: answered 401, kept alive, the body to come.
      head({ authorization: null, connection: null, 'content-length': 1_000_000 }),
    ];
    const answered = await Promise.all(
      requests.map(async (text) => {
        // Half-open allowed: a client that has not sent its body yet does not end its side at the server's FIN.
        const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
        await once(socket, 'connect');
        const first = once(socket, 'data');
        const answer = readAll(socket);
        socket.write(text);
        await first;
        // Wrapped: an async function's promise would take on this one's, which settles only once the connection closes.
        return { socket, answer };
      }),
    );
    const started = Date.now();
    assert.equal(await own.stop('SIGTERM'), 0);
    assert.ok(Date.now() - started < 5000, `stopped in ${Date.now() - started} ms`);
    for (const { socket } of answered) socket.end();
    assert.deepEqual(
      (await Promise.all(answered.map(({ answer }) => answer))).map((res) => res.status),
      [404, 401],
    );
  });
});

describe('a large PDF', () => {
  it('adds no more listeners to its response than Node allows', async () => {
    // Random bytes: an attachment Typst cannot compress.
    const random = randomBytes(1_500_000);
    const res = await generate(service, {
      data: {},
      typst: '0.14',
      template: '#pdf.attach("r.bin", read("r.bin", encoding: none))\nLarge',
      assets: { 'r.bin': random.toString('base64') },
    });
    assert.equal(res.status, 200);
    assert.ok((await res.arrayBuffer()).byteLength > 1024 * 1024, 'a PDF over 1 MiB');
    await sleep(100);
    assert.doesNotMatch(service.output(), /MaxListenersExceededWarning/);
  });
});

describe('the pdf field', () => {
  it('reads the last of a repeated key, as at the top level', async () => {
    const res = await generate(service, `{"data":{},"template":"x","typst":"0.14","pdf":{"standard":"zz","standard":"a-2b"}}`);
    assert.equal(res.status, 200);
    assert.match(Buffer.from(await res.arrayBuffer()).toString('latin1'), /<pdfaid:part>2<\/pdfaid:part>/);
  });
});
