/**
 * Answers to what never becomes a request: HTTP that Node's parser refuses
 * (headers too large, a Content-Length beside Transfer-Encoding, two or
 * negative lengths, garbage), a client too slow to send its request, and
 * URLs Fastify cannot route. Each gets the API's one error shape,
 * `{"error": "..."}`, and where Node must close the connection, the JSON
 * answer goes first.
 *
 * A refusal may come while the body of a request being answered is still
 * arriving (a chunk size that is not a number, a client that closes its
 * side, Node's time for the whole request running out). That body can
 * never be whole, so its receiver is stopped: it wipes what came, and the
 * request is answered (400, 408) and its connection closed; a client that
 * closed its side mid-body is dropped at once. One that half-closes once
 * its request is whole is answered, and then the connection closed.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { PendingBodies } from '../request/pending-bodies.js';
import { jsonErrorBody } from '../bytes/error-body.js';
import { MESSAGES, twoHeaders } from '../messages.js';
import { HttpError, sendError } from './errors.js';
import { wipe } from '../retention/wipe.js';

interface ClientError extends Error {
  code?: string;
  /** llhttp's own words for a parse error. */
  reason?: string;
}

/** The answer to a refusal of Node's parser; `inBody`: it came while a request's body was being read. */
function answerTo(error: ClientError, inBody: boolean): { status: number; message: string } {
  switch (error.code) {
    // Over 16 KiB of head, or over 1,000 header lines (Node's parser counts both).
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: MESSAGES.headersTooLarge };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_REQUEST_HEADERS_TIMEOUT' as string:
      return { status: 408, message: MESSAGES.requestTimeout };
    // llhttp reports two Content-Length headers with this code too (reason "Duplicate Content-Length").
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { status: 400, message: /duplicate/i.test(error.reason ?? '') ? MESSAGES.twoLengths : MESSAGES.lengthAndChunked };
    // These two say "... can't be present with ..." for Content-Length with Transfer-Encoding, whichever came first.
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return {
        status: 400,
        message: /content-length/i.test(error.reason ?? '') ? MESSAGES.lengthAndChunked : MESSAGES.badTransferEncoding,
      };
    case 'HPE_INVALID_CONTENT_LENGTH':
      return { status: 400, message: /transfer-encoding/i.test(error.reason ?? '') ? MESSAGES.lengthAndChunked : MESSAGES.invalidLength };
    // A chunk size that is not hexadecimal (or too large), or a chunk's line not ended by CRLF. In a head, a line
    // not ended by CRLF (a CR or LF alone in a header) is only malformed: a hostile review found it called a chunk.
    case 'HPE_INVALID_CHUNK_SIZE':
      return { status: 400, message: MESSAGES.badChunks };
    case 'HPE_CR_EXPECTED':
    case 'HPE_LF_EXPECTED':
    case 'HPE_STRICT':
      return { status: 400, message: inBody ? MESSAGES.badChunks : MESSAGES.malformedHttp };
    default:
      return { status: 400, message: MESSAGES.malformedHttp };
  }
}

/** The response Node is writing on `socket`, and the request it answers. */
interface InFlight {
  req?: IncomingMessage;
  once(event: 'finish', listener: () => void): void;
}

/**
 * Fastify's `clientErrorHandler`: a JSON answer, then the connection closed. Nothing is logged of it.
 * `bodies` are the bodies being received, one of which may belong to the request in flight.
 */
export function clientErrorHandler(bodies: PendingBodies) {
  return (error: ClientError, socket: Socket): void => {
    // The bytes Node had read when it gave up may hold request content.
    const raw = (error as { rawPacket?: unknown }).rawPacket;
    if (raw instanceof Uint8Array) wipe(raw);
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const inFlight = (socket as Socket & { _httpMessage?: InFlight })._httpMessage;
    if (inFlight) answerInFlight(error, socket, inFlight, bodies);
    else if (answeredMidBody(socket)) socket.destroy();
    else answerRaw(error, socket);
  };
}

/**
 * Whether the request Node is still reading on `socket` has been answered
 * already: refused before its body was read (401, 413 ...), whose body Node
 * drains after the answer. Its response is done (Node lets go of a response
 * once it is written), so a refusal now, such as the time for the whole
 * request running out on a body that never ends, is not answered a second
 * time: a second answer to one request, found by a hostile review, would be
 * read as the answer to the client's next one. The connection is closed.
 */
function answeredMidBody(socket: Socket): boolean {
  const reading = (socket as Socket & { parser?: { incoming?: IncomingMessage | null } }).parser?.incoming;
  return reading !== undefined && reading !== null && !reading.complete;
}

/**
 * A refusal while a request on the connection is being answered: the answer is the route's (after a
 * stopped body, the refusal's own), and the connection closes after it.
 */
function answerInFlight(error: ClientError, socket: Socket, inFlight: InFlight, bodies: PendingBodies): void {
  const request = inFlight.req;
  if (request && !request.complete) {
    // llhttp's word for a connection whose client closed its side before the body was whole.
    if (error.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
    const { status, message } = answerTo(error, true);
    bodies.stop(request, new HttpError(status, message, { connection: 'close' }));
  }
  // The connection closes once the answer is out: the refusal's, after a stopped body; the request's own
  // when the bytes that could not be parsed came after a whole request (an HTTP/1.0 body without a length).
  inFlight.once('finish', () => socket.destroySoon());
}

/** The JSON answer written straight to the socket, for bytes that never became a request. */
function answerRaw(error: ClientError, socket: Socket): void {
  const { status, message } = answerTo(error, false);
  if (socket.writable) socket.write(rawAnswer(status, message));
  socket.destroySoon();
}

/** An error answer as the bytes of an HTTP/1.1 response that closes its connection. */
function rawAnswer(status: number, message: string): Buffer {
  const body = jsonErrorBody(message);
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${body.length}\r\n` +
    'Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n';
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/**
 * The headers a request may carry once, as they are named in answers: each holds one value, not a list
 * (RFC 9110, 5.3). Node takes a request with two, keeping the first, where a proxy in front may keep the
 * last: the two would then read different requests (another key, another body type).
 */
const SINGLE_HEADERS = ['Host', 'Content-Type', 'Authorization'];
const SINGLE_HEADERS_LOWER = SINGLE_HEADERS.map((name) => name.toLowerCase());

/** Whether the header name `name` is `lower` in any case, compared without making a string of it. */
function namedAs(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false;
  // Header names are tokens: `| 0x20` lowers a letter, and leaves `-` and the digits as they are.
  for (let i = 0; i < lower.length; i++) if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/**
 * onRequest, first of all, the request's head: an HTTP/1.1 request without a Host header is malformed.
 * (Node's own check answers it with an empty body, so the server is made without it and this one answers
 * instead.) So is any request with two of a header of SINGLE_HEADERS (for Host, RFC 9112, 3.2). And a
 * request line of another major version than 1 (`HTTP/2.0` in HTTP/1.1's syntax, which Node serves as
 * HTTP/1.1) is a 505 (RFC 9110, 15.6.6).
 */
export async function requireHttp1Head(request: FastifyRequest): Promise<void> {
  const { httpVersionMajor, httpVersionMinor, rawHeaders } = request.raw;
  if (httpVersionMajor !== 1) throw new HttpError(505, MESSAGES.httpVersion, { connection: 'close' });
  if (httpVersionMinor === 1 && request.headers.host === undefined) {
    throw new HttpError(400, MESSAGES.missingHost, { connection: 'close' });
  }
  const seen = SINGLE_HEADERS.map(() => false);
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const which = SINGLE_HEADERS_LOWER.findIndex((lower) => namedAs(rawHeaders[i]!, lower));
    if (which < 0) continue;
    if (seen[which]) throw new HttpError(400, twoHeaders(SINGLE_HEADERS[which]!), { connection: 'close' });
    seen[which] = true;
  }
}

/**
 * A client that half-closes once its request is whole (a shutdown of its
 * writing side, as `nc -N` does) still gets its answer, then the connection
 * is closed. Node's default drops such a request unanswered: with
 * `httpAllowHalfOpen` false (an undocumented property of Node's HTTP
 * server, read where the client's end arrives), its end aborts every
 * request on the connection. A client that half-closes mid-body is still
 * dropped at once: Node's parser reports the cut body as an error first
 * (answerInFlight).
 */
export function answerHalfClosedClients(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}

/**
 * Whether `response` is the last answer owed to a client that half-closed:
 * Node marks it (`_last`, where the client's end arrives) and closes the
 * connection after it, so its head should say `Connection: close` (Node
 * would still write `keep-alive`). Earlier answers of a pipeline are not
 * marked, and keep the connection for the rest. An answer whose head is
 * made before the client's end arrives (a pipelined refusal, answered at
 * once) still says `keep-alive`, and the connection closes after it all
 * the same.
 */
export function lastBeforeHalfClose(response: ServerResponse): boolean {
  return (response as ServerResponse & { _last?: boolean })._last === true;
}

/**
 * CONNECT asks the server to open a tunnel, which this service never does; Node hands such a request
 * to 'connect' listeners only, and closes the connection without an answer when there is none.
 */
export function refuseConnect(server: Server): void {
  server.on('connect', (_request: IncomingMessage, socket: Socket, head: Buffer) => {
    wipe(head);
    socket.on('error', () => undefined);
    socket.end(rawAnswer(501, MESSAGES.connectUnsupported));
  });
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot route (bad encoding, a too long parameter) is a 400 like any other.
 * Fastify answers it outside every hook (app.ts sets the headers every answer has; such a request is not counted).
 */
export function frameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, new HttpError(error.statusCode && error.statusCode < 500 ? error.statusCode : 400, MESSAGES.badUrl));
}
