/**
 * A job and what it comes to: the one `Job` (a checked request body and
 * where its fields are) that the route hands the pool, the pool the worker
 * and the worker its engine; the one `Outcome` the pool hands back; and the
 * parts of an outcome a worker words (warnings, a template's failure).
 * Jobs and outcomes travel as frames of raw bytes on the worker's own pipe
 * (frames.ts); the messages of a worker's start go over Node's IPC channel
 * (worker-start.ts: they carry no request content).
 */
import type { BodyLayout } from '../bytes/layout.js';

/** One compile: the request body as received and where its fields are. Whoever holds its bytes wipes them. */
export interface Job {
  body: Buffer;
  layout: BodyLayout;
}

/**
 * What a job came to. `frame` holds the answer's bytes (`pdf` or
 * `errorBody` are views into it); the caller zero-fills it once sent.
 */
export type Outcome = (
  | {
      kind: 'pdf';
      pdf: Buffer;
      warnings: string | undefined;
      /** The e-invoice business rules' warnings (`X-Einvoice-Warnings`). */
      einvoiceWarnings?: string | undefined;
      compileMs: number;
      frame: Buffer;
      /** Compiled with the layout of the worker's exact check of the body, not the server's (frames.ts JobReport). */
      relaid: boolean;
    }
  | { kind: 'failed'; status: number; errorBody: Buffer; compileMs: number; frame: Buffer }
) & {
  /** The exact Typst version of the engine the job ran on (`X-Typst-Version`). */
  typstVersion: string;
};

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
