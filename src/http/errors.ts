/**
 * How every error is answered: its status, its headers and its body,
 * always `{"error": "..."}`. The words are in src/messages.ts; none is
 * ever logged.
 *
 * An answer that quotes the request (a template's error, an asset's name)
 * is made as bytes, by the worker or from the body, never as a string
 * here; it is sent as it is and wiped once sent.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { jsonErrorBody } from '../bytes/error-body.js';
import { MESSAGES, timeoutMessage } from '../messages.js';
import {
  CompileTimeoutError,
  MemoryLimitError,
  UnavailableError,
  type UnavailableReason,
  WorkerCrashError,
  WorkerKilledError,
} from '../render/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Why a 503 was answered (UnavailableReason: queue full, queue timeout, shutting down, client gone, answers or bodies pending), for the log and metrics. */
    unavailable?: UnavailableReason;
  }
}

/** An error that already knows its answer. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** The whole JSON body, made as bytes, when it quotes the request. */
    readonly body?: Buffer,
  ) {
    super(message);
  }
}

/** Seconds a client should wait before retrying a 503. */
const RETRY_AFTER_SECONDS = 1;

/** Maps any error to its answer. Unknown errors become the API's one 500 message. */
function toHttpError(error: unknown, compileTimeoutMs: number): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof CompileTimeoutError) return new HttpError(422, timeoutMessage(compileTimeoutMs));
  if (error instanceof MemoryLimitError) return new HttpError(422, MESSAGES.memory);
  if (error instanceof WorkerCrashError || error instanceof WorkerKilledError) return new HttpError(500, MESSAGES.internal);
  if (error instanceof UnavailableError) {
    return new HttpError(503, MESSAGES.unavailable, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  }
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(413, MESSAGES.tooLarge);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, MESSAGES.unsupportedMediaType);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HttpError(400, MESSAGES.bodyLengthMismatch);
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpError(status, status === 404 ? MESSAGES.notFound : MESSAGES.badRequest);
  }
  return new HttpError(500, MESSAGES.internal);
}

export function sendError(reply: FastifyReply, error: HttpError): FastifyReply {
  reply.code(error.statusCode).headers(error.headers).type('application/json; charset=utf-8');
  if (!error.body) return reply.send(jsonErrorBody(error.message));
  return reply.send(reply.holdings.hold(error.body));
}

/** Fastify error handler: answers, and logs only the kind of error, never its message. */
export function errorHandler(compileTimeoutMs: number) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const answer = toHttpError(error, compileTimeoutMs);
    if (error instanceof UnavailableError) request.unavailable = error.reason;
    if (answer.statusCode >= 500) {
      request.log.warn(
        { errorKind: (error as Error)?.name, code: (error as FastifyError)?.code, reason: request.unavailable },
        'request failed',
      );
    }
    return sendError(reply, answer);
  };
}
