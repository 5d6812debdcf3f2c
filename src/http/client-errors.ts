/**
 * Answers to what never becomes a request: HTTP that Node's parser refuses
 * (headers too large, a Content-Length beside Transfer-Encoding, two or
 * negative lengths, garbage), a client too slow to send its request, and
 * URLs Fastify cannot route. Each gets the API's one error shape,
 * `{"error": "..."}`, and where Node must close the connection, the JSON
 * answer goes first.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { MESSAGES } from '../messages.js';
import { HttpError, sendError } from './errors.js';

interface ClientError extends Error {
  code?: string;
  /** llhttp's own words for a parse error. */
  reason?: string;
}

function answerTo(error: ClientError): { status: number; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: MESSAGES.headersTooLarge };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_REQUEST_HEADERS_TIMEOUT' as string:
      return { status: 408, message: MESSAGES.requestTimeout };
    // llhttp reports two Content-Length headers with this code too (reason "Duplicate Content-Length").
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { status: 400, message: /duplicate/i.test(error.reason ?? '') ? MESSAGES.twoLengths : MESSAGES.lengthAndChunked };
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return { status: 400, message: MESSAGES.lengthAndChunked };
    case 'HPE_INVALID_CONTENT_LENGTH':
      return { status: 400, message: MESSAGES.invalidLength };
    default:
      return { status: 400, message: MESSAGES.malformedHttp };
  }
}

/** Fastify's `clientErrorHandler`: a JSON answer, then the connection closed. Nothing is logged of it. */
export function clientErrorHandler(error: ClientError, socket: Socket): void {
  // The bytes Node had read when it gave up may hold request content.
  const raw = (error as { rawPacket?: unknown }).rawPacket;
  if (raw instanceof Uint8Array) raw.fill(0);
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Bytes that could not be parsed after a request that is still being answered (an HTTP/1.0 body
  // without a length, say): that answer goes out, and the connection closes after it.
  const inFlight = (socket as Socket & { _httpMessage?: { once(event: 'finish', listener: () => void): void } })._httpMessage;
  if (inFlight) return void inFlight.once('finish', () => socket.destroySoon());
  const { status, message } = answerTo(error);
  const body = JSON.stringify({ error: message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroySoon();
}

/** Fastify's `frameworkErrors`: a URL it cannot route (bad encoding, a too long parameter) is a 400 like any other. */
export function frameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, new HttpError(error.statusCode && error.statusCode < 500 ? error.statusCode : 400, MESSAGES.badUrl));
}
