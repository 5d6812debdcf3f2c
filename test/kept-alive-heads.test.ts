/**
 * Which answers close their connection (src/retention/kept-alive-heads.ts),
 * on a Fastify server of this test's own, over real sockets: an answer whose
 * request's head came in more than one read, whose URL has a query, or whose
 * path the server does not have says `Connection: close` and ends the
 * connection; any other keeps it alive, request after request. The same when
 * JavaScript, not the parser, reads the socket. What the parser would have
 * kept is measured by retention.test.ts.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { createServer, type Server } from 'node:http';
import { closeConnectionsThatKeepHeads, routePaths } from '../src/retention/kept-alive-heads.js';
import { sendWhileAnswered } from './support/raw-http.js';

/** A server of this test's, its sockets read by the parser or, once they have a 'data' listener, by JavaScript. */
async function serve(readByJavaScript: boolean): Promise<FastifyInstance> {
  const app = Fastify();
  closeConnectionsThatKeepHeads(app.server, routePaths(app));
  app.post('/echo', async (request) => ({ length: JSON.stringify(request.body).length }));
  // Node then hands each read to parser.execute.
  if (readByJavaScript) app.server.on('connection', (socket: Socket) => socket.on('data', () => undefined));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

/** A plain Node.js server whose one path is /own. */
async function servePlain(): Promise<Server> {
  const server = createServer((_request, response) => response.end('{}'));
  closeConnectionsThatKeepHeads(server, (url) => url === '/own');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const apps: FastifyInstance[] = [];
let plain: Server;
before(async () => {
  apps.push(await serve(false), await serve(true));
  plain = await servePlain();
});
after(async () => {
  await Promise.all(apps.map((app) => app.close()));
  plain.closeAllConnections();
  await new Promise((resolve) => plain.close(resolve));
});

const body = JSON.stringify({ note: 'x'.repeat(100) });
const requestOf = (line: string) =>
  `${line}\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;

/** A socket connected to `server`. */
async function connectTo(server: Server): Promise<Socket> {
  const { port } = server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  return socket;
}

/** A connection, and its answers' `Connection` headers and whether it closed, request by request. */
async function connection(server: Server = apps[0]!.server) {
  const socket = await connectTo(server);
  socket.setNoDelay(true);
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  const closed = new Promise<void>((resolve) => socket.once('close', resolve));
  let answers = 0;
  return {
    /** Sends one request in the pieces given (each read on its own), and the `Connection` header of its answer. */
    async send(pieces: string[]): Promise<string> {
      for (const piece of pieces) {
        socket.write(piece);
        await sleep(15);
      }
      answers++;
      while ((received.match(/\r\n\r\n\{[^}]*\}/g) ?? []).length < answers) await sleep(5);
      const heads = [...received.matchAll(/^connection: (.*)\r$/gim)];
      return heads[answers - 1]?.[1] ?? '';
    },
    async closedWithin(ms: number): Promise<boolean> {
      return Promise.race([closed.then(() => true), sleep(ms).then(() => false)]);
    },
    end: () => socket.destroy(),
  };
}

describe('answers that close their connection', () => {
  for (const readByJavaScript of [false, true]) {
    const by = readByJavaScript ? 'read by JavaScript' : 'read by the parser';
    it(`keep a connection alive for whole heads, request after request (${by})`, async () => {
      const c = await connection(apps[readByJavaScript ? 1 : 0]!.server);
      const whole = requestOf('POST /echo HTTP/1.1');
      assert.equal(await c.send([whole]), 'keep-alive');
      assert.equal(await c.send([whole]), 'keep-alive');
      // The head in one read, the body in the next.
      assert.equal(await c.send([whole.slice(0, whole.indexOf('{')), body]), 'keep-alive');
      assert.equal(await c.closedWithin(100), false);
      c.end();
    });

    it(`close it after a head that came in pieces (${by})`, async () => {
      const c = await connection(apps[readByJavaScript ? 1 : 0]!.server);
      const whole = requestOf('POST /echo HTTP/1.1');
      assert.equal(await c.send([whole]), 'keep-alive');
      assert.equal(await c.send([whole.slice(0, 30), whole.slice(30)]), 'close');
      assert.equal(await c.closedWithin(1000), true);
    });
  }

  it('close it after a URL with a query', async () => {
    const c = await connection();
    assert.equal(await c.send([requestOf('POST /echo?note=1 HTTP/1.1')]), 'close');
    assert.equal(await c.closedWithin(1000), true);
  });

  it('close it after a path the server does not have', async () => {
    const c = await connection();
    assert.equal(await c.send([requestOf('POST /nowhere HTTP/1.1')]), 'close');
    assert.equal(await c.closedWithin(1000), true);
  });

  it('let a client still sending its body read the answer, read the rest, then close', async () => {
    const socket = await connectTo(apps[0]!.server);
    // A path the server does not have, answered before the body: 8 MiB still to come as the answer goes out.
    const length = 8 * 1024 * 1024;
    const head = `POST /nowhere HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/octet-stream\r\ncontent-length: ${length}\r\n\r\n`;
    const { received, reset } = await sendWhileAnswered(socket, head, length);
    assert.equal(reset, false, 'the server reset the connection');
    assert.match(received, /^HTTP\/1\.1 404 /);
    assert.match(received, /^connection: close\r$/im);
  });

  it("on a plain Node.js server, keep it alive for the server's own path and close it after another", async () => {
    const c = await connection(plain);
    assert.equal(await c.send([requestOf('POST /own HTTP/1.1')]), 'keep-alive');
    assert.equal(await c.send([requestOf('POST /own?x=1 HTTP/1.1')]), 'close');
    assert.equal(await c.closedWithin(1000), true);
  });
});
