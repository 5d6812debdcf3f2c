/**
 * Stopping: SIGTERM lets a compile in flight finish while readiness and new
 * requests get 503 and new connections are refused, then the process exits
 * 0 with no worker left; past SHUTDOWN_TIMEOUT_MS the compile is cut off;
 * and workers never outlive a server that is killed outright.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { METRIC_PREFIX, requestsAnswered, scrape } from './support/metrics.js';
import { generate, MAIN, startService, TEST_KEY, type Service } from './support/service.js';

/** About 2 s of compile on a quiet machine (16·10^6 empty loop turns; 9·10^6 take about 1.1 s), then a page. */
const SLOW = '#for i in range(4000) { for j in range(4000) { } }\nfinished';
const RUNAWAY = '#for i in range(100000) { for j in range(100000) { } }';

/** True once the process is gone (a zombie waiting for its new parent to reap it counts as gone). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return true;
  }
}

async function waitGone(pids: number[], ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && pids.some((pid) => !gone(pid))) await new Promise((r) => setTimeout(r, 25));
  return pids.filter((pid) => !gone(pid));
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Reads HTTP/1.1 responses with Content-Length bodies from one socket, in order. */
class ResponseReader {
  private buffer = Buffer.alloc(0);
  private readonly waiting: Array<() => void> = [];
  constructor(socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (const wake of this.waiting.splice(0)) wake();
    });
  }
  async next(): Promise<RawResponse> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(
          lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        );
        const length = Number(headers['content-length']);
        if (this.buffer.length >= end + 4 + length) {
          const body = Buffer.from(this.buffer.subarray(end + 4, end + 4 + length));
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(statusLine!.split(' ')[1]), headers, body };
        }
      }
      await new Promise<void>((wake) => this.waiting.push(wake));
    }
  }
}

/**
 * Waits until the server has read `count` generate requests, each compiling, queued or answered 200; returns how
 * many were still compiling or queued then.
 */
async function untilRead(service: Service, count: number): Promise<number> {
  for (let looks = 0; looks < 400; looks++) {
    const { samples } = await scrape(`${service.url}/metrics`);
    const waiting = (samples.get(`${METRIC_PREFIX}workers_busy`) ?? 0) + (samples.get(`${METRIC_PREFIX}queue_depth`) ?? 0);
    const answered = samples.get(requestsAnswered('POST', '/v1/pdf/generate', 200)) ?? 0;
    if (waiting + answered >= count) return waiting;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`the server did not read ${count} requests within 400 looks at /metrics`);
}

function generateRequest(template: string): string {
  const body = JSON.stringify({ data: {}, template });
  return (
    `POST /v1/pdf/generate HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_KEY}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

async function openSocket(service: Service): Promise<Socket> {
  const { hostname, port } = new URL(service.url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  return socket;
}

describe('graceful shutdown', () => {
  it('on SIGTERM finishes the compiles in flight, answers 503 meanwhile, exits 0 and leaves no worker', async () => {
    const service = await startService({ WORKERS: '2', COMPILE_TIMEOUT_MS: '60000', SHUTDOWN_TIMEOUT_MS: '60000' });
    const workers = service.workerPids();
    assert.ok(workers.length >= 2, 'two workers (and a spare)');
    const exited = once(service.process, 'exit');
    // Two connections, each busy with a slow compile (an idle connection is closed at shutdown).
    const sockets = [await openSocket(service), await openSocket(service)];
    const readers = sockets.map((socket) => new ResponseReader(socket));
    const started = Date.now();
    for (const socket of sockets) socket.write(generateRequest(SLOW));
    await new Promise((r) => setTimeout(r, 500));
    service.process.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));

    // The listener is closed: a new connection is refused.
    const { hostname, port } = new URL(service.url);
    const refused = connect(Number(port), hostname);
    const [error] = (await once(refused, 'error').catch((e: unknown) => [e])) as [NodeJS.ErrnoException];
    assert.equal(error.code, 'ECONNREFUSED');

    // Requests that still arrive on the open connections: readiness says shutting down, work is refused.
    sockets[0]!.write('GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    sockets[1]!.write(generateRequest('too late'));

    for (const reader of readers) {
      const pdf = await reader.next();
      assert.equal(pdf.status, 200);
      assert.equal(pdf.headers['content-type'], 'application/pdf');
      assert.equal(pdf.body.subarray(0, 5).toString('latin1'), '%PDF-');
    }
    assert.ok(Date.now() - started > 700, 'the compiles were still running when SIGTERM came');
    const ready = await readers[0]!.next();
    assert.equal(ready.status, 503);
    assert.equal(JSON.parse(ready.body.toString()).reason, 'shutting down');
    const late = await readers[1]!.next();
    assert.equal(late.status, 503);
    assert.equal(late.headers['retry-after'], '1');
    assert.equal(late.headers.connection, 'close');
    assert.deepEqual(JSON.parse(late.body.toString()), { error: 'Service temporarily unavailable. Please try again later.' });
    for (const socket of sockets) socket.destroy();

    const [code] = await exited;
    assert.equal(code, 0, service.output());
    assert.deepEqual(await waitGone(workers, 2000), [], 'no worker outlives the server');
    assert.match(service.output(), /"msg":"shutting down"/);
    assert.match(service.output(), /"msg":"stopped"/);
  });

  it('with keep-alive clients exits as soon as the last compile in flight is answered', async () => {
    const service = await startService({ WORKERS: '2', QUEUE_LIMIT: '16' });
    const exited = once(service.process, 'exit');
    // Ten clients, each on a keep-alive connection of its own, each with a compile in flight or queued.
    const agents = Array.from({ length: 10 }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    const post = (agent: Agent, template: string) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ data: {}, template });
        const req = request(`${service.url}/v1/pdf/generate`, {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': Buffer.byteLength(body) },
        });
        req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode!)));
        req.on('error', reject);
        req.end(body);
      });
    const inFlight = Promise.all(agents.map((agent, i) => post(agent, `#for i in range(300000) { }\nrequest ${i}`)));
    // The signal comes once the server has read all ten: a connection still in the kernel's accept queue when the
    // listener closes is reset, which no server can prevent.
    const waiting = await untilRead(service, 10);
    service.process.kill('SIGTERM');
    assert.ok(waiting > 0, 'compiles were in flight or queued at the signal');
    assert.deepEqual(await inFlight, Array(10).fill(200));
    const lastAnswer = Date.now();
    const [code] = await exited;
    for (const agent of agents) agent.destroy();
    assert.equal(code, 0);
    assert.ok(Date.now() - lastAnswer < 2000, `exited ${Date.now() - lastAnswer} ms after the last answer`);
    assert.doesNotMatch(service.output(), /shutdown deadline passed/);
  });

  it('does not wait for connections that owe no answer: silent, a request head not whole, a large answer begun before the signal', async () => {
    const service = await startService({ WORKERS: '1', SHUTDOWN_TIMEOUT_MS: '20000' });
    const exited = once(service.process, 'exit');
    const silent = await openSocket(service);
    const halfHead = await openSocket(service);
    halfHead.write('POST /v1/pdf/generate HTTP/1.1\r\nHost: localhost\r\nContent-Le');
    // A 1.4 MB PDF (written by its worker): its head, with keep-alive, goes out before the signal.
    const large = await openSocket(service);
    const reader = new ResponseReader(large);
    large.write(generateRequest('#set page(height: auto)\n#for i in range(2500) [Line #i of a long document that fills pages. ]'));
    const answered = reader.next();
    while (!(await Promise.race([answered.then(() => true), new Promise((r) => setTimeout(() => r(false), 5))]))) {
      if (large.bytesRead > 0) break;
    }
    const signalledAt = Date.now();
    service.process.kill('SIGTERM');
    const answer = await answered;
    const [code] = await exited;
    assert.equal(code, 0);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.subarray(0, 5).toString(), '%PDF-');
    assert.ok(Date.now() - signalledAt < 3000, `exited ${Date.now() - signalledAt} ms after the signal (SHUTDOWN_TIMEOUT_MS 20000)`);
    assert.doesNotMatch(service.output(), /shutdown deadline passed/);
    for (const socket of [silent, halfHead, large]) socket.destroy();
  });

  it('answers every pipelined request, also after answers that hooks gave before the body (401) or none saw (a bad URL)', async () => {
    const service = await startService({ WORKERS: '1' });
    const socket = await openSocket(service);
    const reader = new ResponseReader(socket);
    const ended = once(socket, 'end');
    // No key: refused by an onRequest hook. (A 404 would end the connection: its path is the client's own.)
    socket.write('GET /v1/fonts HTTP/1.1\r\nHost: localhost\r\n\r\nGET /v1/fonts HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.equal((await reader.next()).status, 401);
    assert.equal((await reader.next()).status, 401);
    // The first compiles for about half a second: the signal comes while all four are owed. The last is a URL
    // Fastify cannot decode, answered by its frameworkErrors handler without any hook.
    socket.write(
      `${generateRequest('#for i in range(2000) { for j in range(2000) { } }\none')}${generateRequest('two')}${generateRequest('three')}` +
        'GET /v1/%E0%A4%A HTTP/1.1\r\nHost: localhost\r\n\r\n',
    );
    await new Promise((r) => setTimeout(r, 100));
    const exited = once(service.process, 'exit');
    service.process.kill('SIGTERM');
    const answers: Awaited<ReturnType<ResponseReader['next']>>[] = [];
    const all = (async () => {
      for (let i = 0; i < 4; i++) answers.push(await reader.next());
    })();
    await Promise.race([all, once(socket, 'close'), new Promise((r) => setTimeout(r, 10_000))]);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 400],
    );
    assert.equal(JSON.parse(answers[3]!.body.toString()).error, 'Malformed URL');
    // Its URL is none of the service's paths, so it ends the connection (Node's parser would keep the URL).
    assert.equal(answers[3]!.headers.connection, 'close');
    await Promise.race([ended, new Promise((_, reject) => setTimeout(() => reject(new Error('not ended')), 5000))]);
    const [code] = await exited;
    assert.equal(code, 0);
  });

  it('stops, with its workers, when the test process that started it ends without stopping it', async () => {
    const support = new URL('./support/service.js', import.meta.url).href;
    const script = `const { startService } = await import(${JSON.stringify(support)});
const service = await startService({ WORKERS: '1' });
console.log(JSON.stringify([service.process.pid, ...service.workerPids()]));
setInterval(() => undefined, 1000);`;
    const starter = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    starter.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    while (!output.includes('\n')) await once(starter.stdout!, 'data');
    const pids = JSON.parse(output) as number[];
    assert.equal(pids.length, 2, 'the server and its worker');
    starter.kill('SIGKILL');
    assert.deepEqual(await waitGone(pids, 10_000), [], 'the service outlived the process that started it');
  });

  it('past SHUTDOWN_TIMEOUT_MS cuts the compile off with 503 and still exits 0', async () => {
    const service = await startService({ WORKERS: '1', SHUTDOWN_TIMEOUT_MS: '500' });
    const workers = service.workerPids();
    const exited = once(service.process, 'exit');
    const runaway = generate(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 300));
    const signalled = Date.now();
    service.process.kill('SIGTERM');
    const res = await runaway;
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '1');
    const [code] = await exited;
    assert.equal(code, 0);
    assert.ok(Date.now() - signalled < 5000, 'stopped soon after the deadline');
    assert.deepEqual(await waitGone(workers, 2000), []);
  });

  it('on SIGINT with nothing in flight exits 0 and leaves no worker', async () => {
    const service = await startService({ WORKERS: '2' });
    const workers = service.workerPids();
    assert.equal(await service.stop('SIGINT'), 0);
    assert.deepEqual(await waitGone(workers, 2000), []);
  });

  it('exits on SIGTERM when whoever read its log has gone (EPIPE), with lines still unwritten', async () => {
    const service = await startService({ WORKERS: '1' });
    const pids = [service.process.pid!, ...service.workerPids()];
    // Its start-up lines are written first (within 100 ms). Then the read end of its stdout closes, and its
    // next write fails with EPIPE: that of the two lines its shutdown logs, still in the batch as it exits
    // when it stops within 100 ms, as with nothing in flight (test/logger.test.ts has the exact case).
    await new Promise((r) => setTimeout(r, 500));
    service.process.stdout!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const exited = once(service.process, 'exit');
    service.process.kill('SIGTERM');
    const code = await Promise.race([
      exited.then(([c]) => c as number),
      new Promise((r) => setTimeout(() => r('still running after 10 s'), 10_000)),
    ]);
    if (code !== 0) service.process.kill('SIGKILL');
    assert.equal(code, 0, service.output());
    assert.deepEqual(await waitGone(pids, 2000), []);
  });
});

describe('a stop asked for while the service starts', () => {
  it('waits for the start, then stops as usual: exit 0, nothing left in its temporary directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'typst-pdf-early-stop-'));
    const packages = join(dir, 'packages', 'preview', 'hello', '0.1.0');
    mkdirSync(packages, { recursive: true });
    writeFileSync(join(packages, 'typst.toml'), '[package]\nname = "hello"\nversion = "0.1.0"\nentrypoint = "lib.typ"\n');
    writeFileSync(join(packages, 'lib.typ'), '#let hello = [Hello]\n');
    const temp = join(dir, 'tmp');
    mkdirSync(temp);
    try {
      const child = spawn(process.execPath, [MAIN], {
        env: {
          PATH: process.env.PATH ?? '',
          HOST: '127.0.0.1',
          PORT: '0',
          API_KEYS: TEST_KEY,
          WORKERS: '4',
          PACKAGE_PATH: join(dir, 'packages'),
          TMPDIR: temp,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = once(child, 'exit');
      // The copy of PACKAGE_PATH exists from here on (it is logged once made); the workers are still starting.
      while (!readdirSync(temp).some((name) => name.startsWith('typst-pdf-packages-'))) await new Promise((r) => setTimeout(r, 2));
      child.kill('SIGTERM');
      const [code, signal] = await Promise.race([
        exited,
        new Promise<[string, null]>((r) => setTimeout(() => r(['still running after 20 s', null]), 20_000)),
      ]);
      if (code !== 0) child.kill('SIGKILL');
      assert.equal(code, 0, `${signal ?? ''} ${output}`);
      assert.match(output, /"msg":"stopped"/);
      assert.deepEqual(readdirSync(temp), [], 'the copy of PACKAGE_PATH is gone');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a server killed outright', () => {
  it('leaves no worker behind, busy in a compile or idle', async () => {
    const service = await startService({ WORKERS: '2' });
    const workers = service.workerPids();
    assert.ok(workers.length >= 2, 'two workers (and a spare)');
    const runaway = generate(service, { data: {}, template: RUNAWAY }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 500));
    await service.stop('SIGKILL');
    await runaway;
    assert.deepEqual(await waitGone(workers, 2000), [], 'workers are gone within 2 s');
  });
});
