/**
 * Why a render did not come back from a worker. The HTTP layer maps each
 * to its status and message (src/http/errors.ts); none carries request
 * content. A template that fails is not an error here: the worker answers
 * it with its own 400 body (see JobResult in job.ts).
 */

/** The compile ran past the time limit; its worker was killed (422). */
export class CompileTimeoutError extends Error {
  override name = 'CompileTimeoutError';
}

/** The compile went past the worker memory cap; its worker was killed (422). */
export class MemoryLimitError extends Error {
  override name = 'MemoryLimitError';
}

/** The worker died under the job (500): the engine crashed, or it stopped answering. */
export class WorkerCrashError extends Error {
  override name = 'WorkerCrashError';
}

/**
 * The worker was killed under the job from outside the service (SIGKILL the
 * pool did not send, and no out-of-memory kill in its cgroup: an operator,
 * say): 500 as a crash, but no fault of the request's key (http/crash-limit.ts).
 */
export class WorkerKilledError extends Error {
  override name = 'WorkerKilledError';
}

/**
 * `answers_pending`: the answers held for clients that have not taken them yet are at their bound (MAX_PENDING_ANSWERS_MB);
 * `bodies_pending`: the bodies being received are at theirs (MAX_PENDING_BODIES_MB); either, or the key's at its half of it.
 */
export type UnavailableReason = 'queue_full' | 'queue_timeout' | 'shutting_down' | 'client_gone' | 'answers_pending' | 'bodies_pending';

/** No capacity now, in the pool or for the request's body or answer: the client should retry later (503). */
export class UnavailableError extends Error {
  override name = 'UnavailableError';
  constructor(readonly reason: UnavailableReason) {
    super(reason);
  }
}
