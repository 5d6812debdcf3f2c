/**
 * What a job comes to: the one `JobResult` that comes back for the one
 * `Job` (bytes/layout.ts) that the route hands the pool, the pool the
 * worker and the worker its engine. The parts of a result a worker words
 * (warnings, a template's failure) are in src/api-values.ts.
 * Jobs and results travel as frames of raw bytes on the worker's own pipe
 * (frames.ts); a worker's start, its request to be replaced and the
 * orders for a PDF it holds go over Node's IPC channel (worker-messages.ts:
 * they carry no request content).
 */
import type { EngineId } from '../engines.js';

/**
 * A compile this long leaves its worker a clean-up to do after it has answered that the next job would
 * wait for (90 ms after a 50-page report that compiles in 300 ms); a shorter one's is over by the time
 * the next request comes. Measured at one request at a time: handing the next job to the other worker
 * took the 200-row report from 42 to 38 ms and the 50-page one from 415 to 315 ms, but made the
 * e-invoice (a 10 ms compile) 1.4 ms slower, its worker's caches cold (docs/performance.md).
 */
export const LONG_COMPILE_MS = 20;

/** What a worker reports with every result. */
export interface JobReport {
  compileMs: number;
  /** The worker's resident memory after the job, for the memory cap. */
  residentBytes: number;
  /** The engine the job ran on (`X-Typst-Version`): the one it names, unless the worker's exact check of its body found otherwise. */
  engine: EngineId;
  /**
   * The worker compiled with the layout its exact check found, not the one it
   * was given (the server's quick check located `data` wrongly): whatever the
   * server read from its own layout may be wrong too.
   */
  relaid: boolean;
  /**
   * The job leaves its worker a clean-up after the answer that the next job would wait for, so the pool
   * hands that one to the other worker (pool.ts, idleSlot): after a compile of LONG_COMPILE_MS or more
   * (its cache eviction); after JavaScript strings of the request, which the worker collects with its
   * whole heap (worker.ts, forgetStrings: a failure, warnings, an e-invoice's business rules; a failing
   * template at one request at a time answered in 7.6 to 9.1 ms against 2.0 for one that compiles);
   * and after a 0.14 compiler that the clean-up drops, whose successor takes 30 to 45 ms to make.
   */
  longCleanUp: boolean;
}

/**
 * What a job came to: the one type the worker's run makes (job-run.ts), the
 * pipe carries (frames.ts) and the pool hands the route: the worker's
 * report, and the answer.
 */
export type JobResult = JobReport & JobAnswer;

/**
 * A PDF with the answer's header values (ASCII; empty: none), or a status
 * and the error answer's bytes. Its buffers are request content, held by a
 * `Holdings` (retention/holdings.ts): in the worker until the pipe has
 * them, in the server by the response (they are views of the frame it was
 * read from).
 */
export type JobAnswer =
  | {
      kind: 'pdf';
      pdf: Buffer;
      /** `X-Typst-Warnings`. */
      warnings: Buffer;
      /** The e-invoice business rules' warnings (`X-Einvoice-Warnings`). */
      einvoiceWarnings: Buffer;
    }
  | { kind: 'failed'; status: number; errorBody: Buffer };

/**
 * The pool's side of a PDF its worker still holds (pool.ts): a large PDF
 * does not cross the pipe if the worker can write it to the client's
 * socket itself. Exactly one of `take` or `drop` ends the job.
 */
export interface PdfDelivery {
  /**
   * Lends `socket` (the client's connection, the answer's head already in
   * the kernel) to the worker, which writes to it what the socket's kernel
   * buffer takes at once; resolves with the rest of the PDF, which came by
   * the pipe (all of it without a socket). Rejects as a render does if the
   * worker died.
   */
  take(socket?: object): Promise<Buffer>;
  /** The answer will not be sent: the worker wipes the PDF and goes on. */
  drop(): void;
}

/** What the pool hands the route: a job's result, or a large PDF its worker holds, with the answer's header values. */
export type RenderResult =
  | JobResult
  | (JobReport & { kind: 'held'; pdfBytes: number; warnings: Buffer; einvoiceWarnings: Buffer; delivery: PdfDelivery });

/** The statuses a worker answers itself, with a body it made (messages.ts words it). */
export const WORKER_STATUS = {
  /** A template that did not compile, or options its engine lacks. */
  templateFailed: 400,
  /** A PDF over MAX_PDF_BYTES. */
  pdfTooLarge: 422,
  /**
   * Text the engines crash on, refused before the compile (bytes/text-runs.ts).
   * Answered 422; a code of its own on the pipe, so it is not counted as a PDF over its limit.
   */
  textRefused: 1422,
} as const;

/** The HTTP status of a worker's status. */
export const httpStatus = (status: number): number => (status === WORKER_STATUS.textRefused ? 422 : status);
