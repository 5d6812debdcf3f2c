/**
 * Why a render did not produce a PDF. The HTTP layer maps each to its
 * status and message (src/http/errors.ts); these carry no request content
 * except TemplateError, whose message goes only to the same request's response.
 */
import type { TemplateFailure } from './protocol.js';

/** The template failed to parse or to run (400). */
export class TemplateError extends Error {
  override name = 'TemplateError';
  constructor(readonly failure: TemplateFailure) {
    super('template failed');
  }
}

/** The compile ran past the time limit; its worker was killed (422). */
export class CompileTimeoutError extends Error {
  override name = 'CompileTimeoutError';
}

/** The compile went past the worker memory cap; its worker was killed (422). */
export class MemoryLimitError extends Error {
  override name = 'MemoryLimitError';
}

/** The worker died under the job (500). */
export class WorkerCrashError extends Error {
  override name = 'WorkerCrashError';
}

export type UnavailableReason = 'queue_full' | 'queue_timeout' | 'shutting_down' | 'client_gone';

/** No capacity now: the client should retry later (503). */
export class PoolUnavailableError extends Error {
  override name = 'PoolUnavailableError';
  constructor(readonly reason: UnavailableReason) {
    super(reason);
  }
}
