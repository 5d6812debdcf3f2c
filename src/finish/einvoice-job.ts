/**
 * The worker's side of an e-invoice job: the request's XML name and asset
 * taken from the job's body, the PDF finished (einvoice.ts), and a refusal
 * worded as the answer's bytes, with the XML's name copied from the body
 * (it is request content: it never becomes a string).
 */
import { assetContent, assetName } from '../bytes/asset-bytes.js';
import { errorBody } from '../bytes/error-body.js';
import { unescapeJsonString } from '../bytes/json-string.js';
import type { Range, Job } from '../bytes/layout.js';
import { EINVOICE_MESSAGES, einvoiceWarningsHeader } from '../messages.js';
import type { EinvoiceOptions } from '../api-values.js';
import { DEFAULT_XML_NAME } from './facturx.js';
import { type PlainNames, plainAttachmentNames } from './attachments.js';
import { type EinvoiceFailure, finishEinvoice, textForms } from './einvoice.js';
import { wipe } from '../retention/wipe.js';

/** `madeStrings`: the step made JavaScript strings of the request (a refusal's message, the business rules' check). */
export type FinishedJob =
  | { ok: true; pdf: Buffer; warnings: Buffer; madeStrings: boolean }
  | { ok: false; errorBody: Buffer; madeStrings: true };

/** The request's asset named `name` (UTF-8 bytes), decoded; the last one of that name counts. */
function assetNamed(job: Job, name: Buffer): Buffer | undefined {
  const { body, layout } = job;
  for (let i = layout.assets.length - 1; i >= 0; i--) {
    const asset = layout.assets[i]!;
    const candidate = assetName(body, layout, asset);
    const same = candidate.equals(name);
    wipe(candidate);
    if (same) return assetContent(body, layout, asset);
  }
  return undefined;
}

/** The two parts of a refusal's message, around the XML's name. */
function messageParts(failure: EinvoiceFailure): { before: string; after: string } {
  if (failure.kind === 'no-xml') return EINVOICE_MESSAGES.noXml;
  if (failure.kind === 'rules') return EINVOICE_MESSAGES.rules(failure.errors);
  if (failure.kind === 'name-taken') return EINVOICE_MESSAGES.nameTaken(failure.fileName);
  const { refusal } = failure;
  switch (refusal.kind) {
    case 'malformed':
      return EINVOICE_MESSAGES.malformed(refusal.line, refusal.message);
    case 'doctype':
      return EINVOICE_MESSAGES.doctype(refusal.line);
    case 'schema':
      return EINVOICE_MESSAGES.schema(refusal.profile, refusal.line, refusal.message);
    case 'encoding':
      return EINVOICE_MESSAGES.encoding;
    case 'no-profile':
      return EINVOICE_MESSAGES.noProfile;
    case 'unknown-profile':
      return EINVOICE_MESSAGES.unknownProfile;
    case 'profile-mismatch':
      return EINVOICE_MESSAGES.profileMismatch(refusal.requested, refusal.declared);
  }
}

/** The answer to a refused e-invoice: the message with the XML's name from the body (or the default name). */
function refusalBody(job: Job, xml: Range | undefined, failure: EinvoiceFailure): Buffer {
  const parts = messageParts(failure);
  if (xml) return errorBody(job.body, { status: 400, before: parts.before, name: xml, after: parts.after });
  return errorBody(job.body, { status: 400, message: parts.before + DEFAULT_XML_NAME + parts.after });
}

/**
 * Finishes the job's PDF as its `pdf.einvoice` asks, its attachments under
 * plain names first (attachments.ts), the XML found by the name the request
 * gives, as the template attached it; `pdf` is the caller's to wipe.
 */
export function finishJob(job: Job, einvoice: EinvoiceOptions, pdf: Buffer): FinishedJob {
  const xmlName = einvoice.xml ? unescapeJsonString(job.body, einvoice.xml) : Buffer.from(DEFAULT_XML_NAME);
  const xmlForms = textForms(xmlName);
  let plain: PlainNames = {};
  try {
    plain = plainAttachmentNames(pdf, xmlForms);
    const finished = finishEinvoice(plain.pdf ?? pdf, {
      xmlForms,
      spec: plain.namedSpec,
      profile: einvoice.profile,
      asset: () => assetNamed(job, xmlName),
    });
    if (!finished.ok) return { ok: false, errorBody: refusalBody(job, einvoice.xml, finished.failure), madeStrings: true };
    const warnings = Buffer.from(einvoiceWarningsHeader(finished.warnings), 'latin1');
    return { ok: true, pdf: finished.pdf, warnings, madeStrings: finished.ruled };
  } finally {
    wipe(xmlName, ...xmlForms, plain.pdf);
  }
}
