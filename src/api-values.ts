/**
 * The values and shapes of the API that several floors of src/ share: the
 * body limit, the PDF standards, e-invoice profiles and signature texts a
 * request may name, and the parts the words of an answer are made from (a place in a text, a
 * template's failure, a warning). Pure data, importing nothing: messages.ts
 * words these, bytes/ checks a body against them, config.ts, render/ and
 * finish/ use them, and none of them has to reach up to another for them.
 */

/** The request body limit: 10 MB, counted as 10 × 1024 × 1024 bytes. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** MAX_IMAGE_PIXELS unless set (config.ts): 100 megapixels (a 300 dpi A4 page is 8.7). */
export const DEFAULT_MAX_IMAGE_PIXELS = 100_000_000;

/** The profiles, as a request's `pdf.einvoice.profile` and `fx:ConformanceLevel` name them. */
export const EINVOICE_PROFILES = ['MINIMUM', 'BASIC WL', 'BASIC', 'EN 16931', 'EXTENDED', 'XRECHNUNG'] as const;
export type EinvoiceProfile = (typeof EINVOICE_PROFILES)[number];

/** The PDF standards an e-invoice may be written to (PDF/A-3 takes attachments); the first is the default. */
export const EINVOICE_STANDARDS = ['a-3b', 'a-3u', 'a-3a'] as const;

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

/** The Factur-X XSDs the service checks with (schemas/factur-x/, version 1.07.3). */
export const FACTURX_XSD_VERSION = '1.07.3';

/** A place in a text, both from 1 (bytes/text-position.ts says how they are counted). */
export interface Place {
  line: number;
  column: number;
}

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
