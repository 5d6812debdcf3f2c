/**
 * What a job comes to: the one `Outcome` the pool hands back for the one
 * `Job` (bytes/layout.ts) that the route hands the pool, the pool the
 * worker and the worker its engine; the parts of an outcome a worker words
 * (warnings, a template's failure) are in src/api-values.ts.
 * Jobs and outcomes travel as frames of raw bytes on the worker's own pipe
 * (frames.ts); the messages of a worker's start go over Node's IPC channel
 * (worker-start.ts: they carry no request content).
 */

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
