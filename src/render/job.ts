/**
 * A job and what it comes to: the one `Job` (a checked request body and
 * where its fields are) that the route hands the pool, the pool the worker
 * and the worker its engine; the one `JobResult` that comes back; and the
 * parts of a result a worker words (warnings, a template's failure).
 * Jobs and results travel as frames of raw bytes on the worker's own pipe
 * (frames.ts); the messages of a worker's start go over Node's IPC channel
 * (worker-start.ts: they carry no request content).
 */
import type { BodyLayout } from '../body/layout.js';
import type { EngineId } from '../typst-version.js';

/** One compile: the request body as received and where its fields are. Whoever holds its bytes wipes them. */
export interface Job {
  body: Buffer;
  layout: BodyLayout;
}

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

export interface Warning {
  message: string;
  /** 1-based line in the template as sent, when known. */
  line: number | null;
  /** 1-based column (in characters) in the template as sent, when known. */
  column?: number | null;
}

/** Why a template failed, as the HTTP layer words it (src/messages.ts). */
export type TemplateFailure =
  | {
      kind: 'syntax' | 'evaluation';
      message: string;
      line: number | null;
      column: number | null;
      /** The asset the error is in, when it is not the template itself (an included `.typ`). */
      file?: string;
    }
  | { kind: 'data'; message: string };

/** The statuses a worker answers itself, with a body it made (messages.ts words it). */
export const WORKER_STATUS = {
  /** A template that did not compile, or options its engine lacks. */
  templateFailed: 400,
  /** A PDF over MAX_PDF_BYTES. */
  pdfTooLarge: 422,
  /**
   * Text the engines crash on, refused before the compile (body/text-runs.ts).
   * Answered 422; a code of its own on the pipe, so it is not counted as a PDF over its limit.
   */
  textRefused: 1422,
} as const;

/** The HTTP status of a worker's status. */
export const httpStatus = (status: number): number => (status === WORKER_STATUS.textRefused ? 422 : status);
