/**
 * What the body check finds in a request's bytes: where each field is, as
 * byte ranges of the body, or why the body is refused; and the `Job`, a
 * body with its layout. Types only, shared by the checker's files (here and
 * in src/request/) and the render side that reads the body by these ranges.
 */
import type { EngineId } from '../engines.js';
import type { PdfOptions, SignatureField } from '../api-values.js';

/** Byte offsets into the body, end exclusive. */
export interface Range {
  start: number;
  end: number;
}

/** The kind of a JSON value, from its first byte. */
export type Kind = 'object' | 'array' | 'string' | 'number' | 'literal';

/**
 * One asset: the raw bytes of its key and of its value string, between
 * their quotes (escapes not decoded); in a form, its file name and its bytes.
 */
export interface AssetEntry {
  name: Range;
  value: Range;
}

export interface BodyLayout {
  /** The `data` object, from `{` to `}`. */
  data: Range;
  /** The content of the `template` string, between its quotes. */
  template: Range;
  /** The assets, in order of first appearance, each name once (its last value counts). */
  assets: AssetEntry[];
  /** The engine the request names; absent: the operator's default. */
  typst?: EngineId;
  /** PDF export options the request names (Typst 0.14 only; the worker refuses them on 0.11). */
  pdf?: PdfOptions;
  /**
   * The request asks for a signature (`pdf.signature`), with these texts: each
   * the content of its JSON string, between its quotes (escapes not decoded).
   * The server signs after the worker's answer; the worker never sees it.
   */
  signature?: Partial<Record<SignatureField, Range>>;
  /**
   * `data` was located, not read (a large body: bytes/data-end.ts): Typst's
   * `json()` checks it, and a job that fails is checked exactly by the worker.
   */
  dataUnchecked?: boolean;
  /**
   * The body is a multipart form (form-check.ts): the template and the
   * names are UTF-8 text and the assets the files' bytes, as sent (no JSON
   * escapes, no base64).
   */
  form?: boolean;
}

/** One compile: the request body as received and where its fields are. Whoever holds its bytes wipes them. */
export interface Job {
  body: Buffer;
  layout: BodyLayout;
}

/**
 * Why a body is refused (always 400). A message about an asset names it,
 * but the name is request content: it stays bytes of the body, between two
 * fixed parts (see error-body.ts).
 */
export type BodyError =
  | { status: 400; message: string }
  /** `raw`: the name is a form's file name, bytes as sent, not JSON string content. */
  | { status: 400; before: string; name: Range; after: string; raw?: boolean };
