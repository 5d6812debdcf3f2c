/**
 * The Typst engines the service runs, the PDF export options of the
 * later one, and the texts a request may give a signature. Pure data: the server checks request fields against it without
 * loading a native binding (only workers do that, see render/bindings.ts).
 */
import type { EinvoiceProfile } from './api-values.js';

/** The engines, as a request's `typst` field names them. */
export const ENGINE_IDS = ['0.11', '0.14'] as const;
export type EngineId = (typeof ENGINE_IDS)[number];

/** The exact Typst version each engine embeds (its PDFs say "Typst <version>"; answered as `X-Typst-Version`). */
export const ENGINE_VERSIONS: Record<EngineId, string> = { '0.11': '0.11.1', '0.14': '0.14.2' };

/** The npm package each engine is loaded from, and the package it is published as. */
export const ENGINE_PACKAGES: Record<EngineId, { module: string; binding: string }> = {
  '0.11': { module: '@myriaddreamin/typst-ts-node-compiler', binding: '@myriaddreamin/typst-ts-node-compiler' },
  '0.14': { module: 'typst-ts-node-compiler-0.14', binding: '@myriaddreamin/typst-ts-node-compiler' },
};

/** The engine a request gets without a `typst` field, unless the operator names another (TYPST_VERSION). */
export const DEFAULT_ENGINE: EngineId = '0.11';

/** The engine a name stands for: the short form ("0.14") or the exact version ("0.14.2"). */
export function engineOf(name: string): EngineId | undefined {
  return ENGINE_IDS.find((id) => id === name || ENGINE_VERSIONS[id] === name);
}

/** Typst 0.14's `--pdf-standard` values (its binding's `PdfStandard`), in its order. */
export const PDF_STANDARDS = [
  '1.4',
  '1.5',
  '1.6',
  '1.7',
  '2.0',
  'a-1b',
  'a-1a',
  'a-2b',
  'a-2u',
  'a-2a',
  'a-3b',
  'a-3u',
  'a-3a',
  'a-4',
  'a-4f',
  'a-4e',
  'ua-1',
] as const;
export type PdfStandard = (typeof PDF_STANDARDS)[number];

/** A request's `pdf` field, checked: what Typst 0.14's export is asked for, and how the PDF is finished. */
export interface PdfOptions {
  standard?: PdfStandard;
  tagged?: boolean;
  /** `pdf.einvoice`: a Factur-X / ZUGFeRD invoice (src/finish/). */
  einvoice?: EinvoiceOptions;
}

/** `pdf.einvoice`, checked. The XML's name stays where it is in the body (request content). */
export interface EinvoiceOptions {
  /** The `xml` string's content, between its quotes, as byte offsets of the body; absent: `factur-x.xml`. */
  xml?: { start: number; end: number };
  profile?: EinvoiceProfile;
}

/** The texts a request may give its signature (`pdf.signature`), as the PDF's signature dictionary names them: /Reason, /Location, /ContactInfo. */
export const SIGNATURE_FIELDS = ['reason', 'location', 'contact'] as const;
export type SignatureField = (typeof SIGNATURE_FIELDS)[number];

/** The longest text of a signature field, in characters (Unicode code points). */
export const SIGNATURE_TEXT_CHARS = 256;
