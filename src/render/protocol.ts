/**
 * What a worker tells the server. Control messages of a worker's start go
 * over Node's IPC channel (they carry no request content); jobs and their
 * outcomes travel as frames of raw bytes on the worker's own pipe (frames.ts).
 */

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

/** The status a worker answers for a PDF over MAX_PDF_BYTES: the only 422 a worker answers itself (its others are 400). */
export const PDF_TOO_LARGE_STATUS = 422;

export type ControlMessage = { type: 'ready' } | { type: 'fatal'; message: string };
