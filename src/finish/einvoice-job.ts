/**
 * The worker's side of an e-invoice job: the request's XML name and asset
 * taken from the job's body, the PDF finished (einvoice.ts), and a refusal
 * worded as the answer's bytes, with the XML's name copied from the body
 * (it is request content: it never becomes a string).
 */
import { decodeAssetValue } from '../body/base64.js';
import { errorBody } from '../body/error-body.js';
import { unescapeJsonString } from '../body/json-string.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import type { Range } from '../body/layout.js';
import { EINVOICE_MESSAGES, einvoiceWarningsHeader } from '../messages.js';
import type { Job } from '../render/job.js';
import type { EinvoiceOptions } from '../typst-version.js';
import { DEFAULT_XML_NAME } from './facturx.js';
import { type EinvoiceFailure, finishEinvoice } from './einvoice.js';

export type FinishedJob = { ok: true; pdf: Buffer; warnings: Buffer } | { ok: false; errorBody: Buffer };

/** The request's asset named `name` (UTF-8 bytes), decoded; the last one of that name counts. */
function assetNamed(job: Job, name: Buffer): Buffer | undefined {
  for (let i = job.layout.assets.length - 1; i >= 0; i--) {
    const asset = job.layout.assets[i]!;
    // A form's names and files are as sent (render/engine.ts mapAssets); JSON's are escaped and base64.
    const { form } = job.layout;
    const candidate = form ? job.body.subarray(asset.name.start, asset.name.end) : unescapeJsonString(job.body, asset.name);
    const same = candidate.equals(name);
    if (!form) candidate.fill(0);
    if (!same) continue;
    if (!form) return decodeAssetValue(job.body, asset.value);
    const value = ownedBuffer(asset.value.end - asset.value.start);
    job.body.copy(value, 0, asset.value.start, asset.value.end);
    return value;
  }
  return undefined;
}

/** The two parts of a refusal's message, around the XML's name. */
function messageParts(failure: EinvoiceFailure): { before: string; after: string } {
  if (failure.kind === 'no-xml') return EINVOICE_MESSAGES.noXml;
  if (failure.kind === 'rules') return EINVOICE_MESSAGES.rules(failure.errors);
  const { refusal } = failure;
  switch (refusal.kind) {
    case 'malformed':
      return EINVOICE_MESSAGES.malformed(refusal.line, refusal.message);
    case 'doctype':
      return EINVOICE_MESSAGES.doctype(refusal.line);
    case 'schema':
      return EINVOICE_MESSAGES.schema(refusal.profile, refusal.line, refusal.message);
    case 'no-profile':
      return EINVOICE_MESSAGES.noProfile;
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

/** Finishes the job's PDF as its `pdf.einvoice` asks; `pdf` is the caller's to wipe. */
export function finishJob(job: Job, einvoice: EinvoiceOptions, pdf: Buffer): FinishedJob {
  const xmlName = einvoice.xml ? unescapeJsonString(job.body, einvoice.xml) : Buffer.from(DEFAULT_XML_NAME);
  try {
    const finished = finishEinvoice(pdf, { xmlName, profile: einvoice.profile, asset: () => assetNamed(job, xmlName) });
    if (!finished.ok) return { ok: false, errorBody: refusalBody(job, einvoice.xml, finished.failure) };
    const warnings = Buffer.from(einvoiceWarningsHeader(finished.warnings), 'latin1');
    return { ok: true, pdf: finished.pdf, warnings };
  } finally {
    xmlName.fill(0);
  }
}
