/**
 * Raw HTTP/1.1 over a socket, for clients no well-behaved library would
 * be: bodies that are not JSON or not UTF-8, missing headers, stalls and
 * disconnects.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { TEST_KEY, type Service } from './service.js';

export interface RawResponse {
  status: number;
  headers: string;
  body: string;
  ms: number;
}

/** Opens a connection to the service. */
export function open(service: Service): Promise<Socket> {
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Writes `text` on a connection of its own to `url`'s port (any server of
 * the service's: the API's, the metrics'), and ends its side after it if
 * `halfClose`. Resolves once the answer's head has come, past a 100
 * Continue: its status line, and the socket, still open on the server's
 * side.
 */
export async function answerHead(url: string, text: string, halfClose: boolean): Promise<{ statusLine: string; socket: Socket }> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.on('error', () => undefined);
  let received = '';
  const statusLine = new Promise<string>((resolve) =>
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const final = /HTTP\/1\.1 [2-5]\d\d [^\r]*\r\n/.exec(received);
      if (final && received.includes('\r\n\r\n', final.index)) resolve(final[0].trim());
    }),
  );
  socket.write(text);
  if (halfClose) socket.end();
  return { statusLine: await statusLine, socket };
}

/** The request head of a generate call; `headers` replace the defaults (null removes one). */
export function head(headers: Record<string, string | number | null> = {}): string {
  const all: Record<string, string | number | null> = {
    host: 'localhost',
    authorization: `Bearer ${TEST_KEY}`,
    'content-type': 'application/json',
    connection: 'close',
    ...headers,
  };
  const lines = Object.entries(all)
    .filter((e): e is [string, string | number] => e[1] !== null)
    .map(([k, v]) => `${k}: ${v}`);
  return `POST /v1/pdf/generate HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

/** Reads everything the server sends until it closes the connection. */
export function readAll(socket: Socket, started = Date.now()): Promise<RawResponse> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      // Interim answers (100 Continue) come before the real one.
      const text = Buffer.concat(chunks)
        .toString('latin1')
        .replace(/^(HTTP\/1\.1 1\d\d [^\r]*\r\n\r\n)+/, '');
      const split = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, headers: text.slice(0, split), body: text.slice(split + 4), ms: Date.now() - started });
    });
  });
}

/** Sends `body` with a matching Content-Length (unless headers override it) and reads the answer. */
export async function rawRequest(
  service: Service,
  body: Buffer | string,
  headers: Record<string, string | number | null> = {},
): Promise<RawResponse> {
  const started = Date.now();
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const socket = await open(service);
  const answer = readAll(socket, started);
  socket.write(head({ 'content-length': bytes.length, ...headers }));
  // Its side left open, as most clients do (a half-close is answered too: test/hostile/unfinished-requests).
  socket.write(bytes);
  return answer;
}

/** The JSON error message of a raw response (a chunked body is de-chunked first). */
export function errorOf(response: RawResponse): string {
  let body = response.body;
  if (/transfer-encoding: chunked/i.test(response.headers)) {
    let out = '';
    let rest = body;
    for (;;) {
      const nl = rest.indexOf('\r\n');
      const size = parseInt(rest.slice(0, nl), 16);
      if (!size) break;
      out += rest.slice(nl + 2, nl + 2 + size);
      rest = rest.slice(nl + 2 + size + 2);
    }
    body = out;
  }
  return (JSON.parse(Buffer.from(body, 'latin1').toString('utf8')) as { error: string }).error;
}

/**
 * Writes `text` (a request head) on `socket`, then up to `length` bytes of body while the answer comes, as a client
 * that sends its whole body before it reads does, until the server's end of the connection ends it: what it
 * received, and whether the server reset the connection.
 */
export async function sendWhileAnswered(socket: Socket, text: string, length: number): Promise<{ received: string; reset: boolean }> {
  let received = '';
  let reset = false;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  socket.on('error', () => {
    reset = true;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', resolve));
  socket.write(text);
  const piece = Buffer.alloc(64 * 1024, 0x61);
  for (let sent = 0; sent < length && socket.writable; sent += piece.length) {
    if (!socket.write(piece)) await Promise.race([once(socket, 'drain'), closed]);
  }
  await closed;
  return { received, reset };
}
