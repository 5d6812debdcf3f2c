/**
 * Every error the API answers, in one place: its status, its message and
 * its headers. Bodies are always `{"error": "..."}`; none shows a server
 * path or a stack, and none of these messages is ever logged.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  CompileTimeoutError,
  MemoryLimitError,
  PoolUnavailableError,
  TemplateError,
  WorkerCrashError,
} from '../render/errors.js';
import type { TemplateFailure } from '../render/protocol.js';

export const MESSAGES = {
  unauthorized: 'Missing or invalid API Key',
  tooLarge: 'Payload exceeds 10MB limit',
  unsupportedMediaType: 'Content-Type must be application/json',
  rateLimited: 'Rate limit exceeded',
  memory: 'Template compilation exceeded the memory limit',
  internal: 'An unexpected error occurred during document compilation.',
  unavailable: 'Service temporarily unavailable. Please try again later.',
  notFound: 'Not found',
} as const;

/** An error that already knows its answer. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function timeoutMessage(timeoutMs: number): string {
  const seconds = Math.round((timeoutMs / 1000) * 10) / 10;
  return `Template compilation exceeded the ${seconds} second limit`;
}

/** The 400 message for a template that did not compile, with its place in the template as sent. */
export function templateMessage(failure: TemplateFailure): string {
  if (failure.kind === 'data') return `The request's data could not be read by Typst: ${failure.message}`;
  const where = failure.line === null ? '' : ` on line ${failure.line}${failure.column === null ? '' : `, column ${failure.column}`}`;
  return failure.kind === 'syntax'
    ? `Invalid Typst syntax${where}: ${failure.message}`
    : `Typst error${where}: ${failure.message}`;
}

/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1;

/** Ajv's validation errors, worded for the client with the field they concern. */
function validationMessage(error: FastifyError): string {
  const first = error.validation?.[0];
  if (!first) return 'Invalid request body';
  const params = first.params as Record<string, unknown>;
  const field = typeof params.missingProperty === 'string' ? params.missingProperty : first.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const expected: Record<string, string> = { data: 'a JSON object', template: 'a string of Typst markup' };
  if (first.keyword === 'required') return `Missing required field "${field}": expected ${expected[field] ?? 'a value'}`;
  if (first.keyword === 'type' && field === '') return 'Request body must be a JSON object with fields "data" and "template"';
  if (first.keyword === 'type') return `Field "${field}" must be ${expected[field] ?? String(params.type)}`;
  return `Invalid request body: field "${field}" ${first.message ?? 'is invalid'}`;
}

/** Maps any error to its answer. Unknown errors become the SPEC's 500 message. */
export function toHttpError(error: unknown, compileTimeoutMs: number): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof TemplateError) return new HttpError(400, templateMessage(error.failure));
  if (error instanceof CompileTimeoutError) return new HttpError(422, timeoutMessage(compileTimeoutMs));
  if (error instanceof MemoryLimitError) return new HttpError(422, MESSAGES.memory);
  if (error instanceof WorkerCrashError) return new HttpError(500, MESSAGES.internal);
  if (error instanceof PoolUnavailableError) {
    return new HttpError(503, MESSAGES.unavailable, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return new HttpError(400, validationMessage(fastifyError));
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(413, MESSAGES.tooLarge);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, MESSAGES.unsupportedMediaType);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError(400, 'Request body is empty: expected a JSON object with fields "data" and "template"');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HttpError(400, 'Request body length does not match Content-Length');
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpError(status, status === 404 ? MESSAGES.notFound : 'Bad request');
  }
  return new HttpError(500, MESSAGES.internal);
}

export function sendError(reply: FastifyReply, error: HttpError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).type('application/json; charset=utf-8').send({ error: error.message });
}

/** Fastify error handler: answers, and logs only the kind of error, never its message. */
export function errorHandler(compileTimeoutMs: number) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const answer = toHttpError(error, compileTimeoutMs);
    if (answer.statusCode >= 500) {
      request.log.warn({ errorKind: (error as Error)?.name, code: (error as FastifyError)?.code }, 'request failed');
    }
    return sendError(reply, answer);
  };
}
