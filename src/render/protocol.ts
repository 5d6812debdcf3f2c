/**
 * Messages between the server and a worker process (IPC with Node's
 * "advanced" serialization, so byte arrays travel without base64).
 */
import type { FontFamilyInfo } from './fonts.js';

/** One compile: the raw request body (Typst reads `data` from it) and the template. */
export interface JobMessage {
  type: 'job';
  id: number;
  /** The request body as sent: a JSON object whose `data` field becomes `data`. */
  body: Uint8Array;
  template: string;
}

export interface Warning {
  message: string;
  /** 1-based line in the template as sent, when Typst gives one. */
  line: number | null;
}

/** Why a template failed, as the HTTP layer words it. */
export type TemplateFailure =
  | { kind: 'syntax' | 'evaluation'; message: string; line: number | null; column: number | null }
  | { kind: 'data'; message: string };

export type WorkerMessage =
  | { type: 'ready'; typstVersion: string; startMs: number; fonts: FontFamilyInfo[]; fontBytes: number }
  | { type: 'fatal'; message: string }
  /** The worker has the job and is about to compile it (sent before the compile blocks the worker). */
  | { type: 'started'; id: number }
  | { type: 'done'; id: number; pdf: Uint8Array; pages: number; compileMs: number; warnings: Warning[] }
  | { type: 'failed'; id: number; failure: TemplateFailure; compileMs: number };
