/**
 * POST /v1/pdf/generate: hands the checked body to the render pool and
 * answers with the PDF bytes, or with the worker's error answer for a
 * template that failed. Errors of the pool are answered by the error
 * handler. Every buffer of the request and of the answer is wiped once
 * the response is sent.
 */
import type { FastifyInstance } from 'fastify';
import { giveBack, wipeBody } from '../body/body-pool.js';
import { checkBody } from '../body/json-check.js';
import type { BodyLayout } from '../body/layout.js';
import { PoolUnavailableError } from '../render/errors.js';
import type { Job, Outcome } from '../render/job.js';
import { WORKER_STATUS } from '../render/job.js';
import type { AnswerLimits } from './answer-limits.js';
import { requireJsonWithinLimit } from './json-body.js';
import { HttpError } from './errors.js';
import type { PdfSigner } from '../finish/signature-signer.js';
import { MESSAGES } from '../messages.js';
import {
  ENGINE_IDS,
  ENGINE_VERSIONS,
  PDF_STANDARDS,
  SIGNATURE_FIELDS,
  SIGNATURE_TEXT_CHARS,
  type SignatureField,
} from '../typst-version.js';

const SIGNATURE_FIELD_MEANINGS: Record<SignatureField, string> = {
  reason: "Why the document is signed (the signature's /Reason).",
  location: 'Where it is signed (/Location).',
  contact: 'How to reach the signer (/ContactInfo).',
};

export interface Renderer {
  render(job: Job, signal?: AbortSignal): Promise<Outcome>;
}

/** The request body's schema, for the OpenAPI document (the body is checked byte by byte in src/body/). */
export const generateBodySchema = {
  type: 'object',
  required: ['data', 'template'],
  properties: {
    data: { type: 'object', description: 'Exposed to the template as the Typst dictionary `data`.' },
    template: { type: 'string', description: 'Typst markup.' },
    assets: {
      type: 'object',
      description:
        'Files the template reads by name (`#image("logo.png")`, `#read`, `#csv`, `#json`, `#include`), by relative or absolute path. ' +
        'Names: segments of `A-Za-z0-9._-` joined by `/`, no `.` or `..` segment, no leading `/`, at most 255 characters; at most 1,000 entries. ' +
        'Values: base64 (standard alphabet; padding and ASCII whitespace tolerated) or a `data:<type>;base64,` URL. They count toward the 10 MB body limit. ' +
        'A PNG, JPEG, GIF or WebP (told by its first bytes) whose header declares more pixels than the service allows (MAX_IMAGE_PIXELS, 100 megapixels unless set) is refused with 400 before any compile.',
      maxProperties: 1000,
      propertyNames: {
        type: 'string',
        maxLength: 255,
        pattern: '^(?!\\.{1,2}(/|$))(?!.*/\\.{1,2}(/|$))[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$',
      },
      additionalProperties: { type: 'string', description: 'base64, or data:<type>;base64,<base64>' },
      examples: [{ 'logo.png': 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==' }],
    },
    typst: {
      enum: [...ENGINE_IDS, ...ENGINE_IDS.map((id) => ENGINE_VERSIONS[id])],
      description:
        "The Typst engine: `0.11` (Typst 0.11.1) or `0.14` (Typst 0.14.2), or the exact version. Absent or null: the operator's default (TYPST_VERSION, `0.11` unless set). " +
        'The answer names the version in `X-Typst-Version`.',
    },
    pdf: {
      type: ['object', 'null'],
      description:
        'PDF output options. `standard` and `tagged` are options of the Typst 0.14 engine (with 0.11: 400): a standard Typst checks the document against, and declares in the XMP metadata; ' +
        "what the standard forbids (transparency under PDF/A-1, an attached file under PDF/A-2, a missing title under PDF/UA-1, ...) is a 400 with Typst's message. " +
        "`signature`, on either engine, asks for the PDF signed by the service's identity.",
      additionalProperties: false,
      properties: {
        standard: {
          enum: [...PDF_STANDARDS],
          description: 'PDF version (`1.4` to `2.0`), PDF/A level (`a-1b` to `a-4e`) or PDF/UA-1 (`ua-1`).',
        },
        tagged: { type: 'boolean', description: 'Write a tagged PDF (default true; PDF/A-*a and PDF/UA-1 need it).' },
        signature: {
          type: 'object',
          description:
            "Sign the PDF by the service's identity (SIGNING_P12_FILE): a PAdES baseline B-B signature (CMS detached, SHA-256, the certificate chain), " +
            "in an invisible field on page 1, added as an incremental update, at the server's time. A service without an identity answers 400. " +
            '`GET /readyz` says whether this one has one (`signing`).',
          additionalProperties: false,
          properties: Object.fromEntries(
            SIGNATURE_FIELDS.map((field) => [
              field,
              { type: 'string', maxLength: SIGNATURE_TEXT_CHARS, description: SIGNATURE_FIELD_MEANINGS[field] },
            ]),
          ),
        },
      },
      examples: [{ standard: 'a-3b' }, { signature: { reason: 'Approved', location: 'Berlin' } }],
    },
  },
} as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** Time the worker spent compiling, for the request log. */
    compileMs?: number;
  }
}

/**
 * The layout of the body checked exactly: for a body whose `data` the quick
 * check located wrongly (the worker compiled with the exact layout: a rare
 * shape of large body), so that its `pdf.signature` is the one it holds.
 * The worker's exact check took this body, so this one does too; its assets'
 * image sizes were checked already, hence no bound here.
 */
function exactLayout(body: Buffer): BodyLayout {
  const check = checkBody(body, { maxImagePixels: Number.MAX_SAFE_INTEGER, largeDataBytes: Number.POSITIVE_INFINITY });
  if (!check.ok) throw new Error('the exact check refused a body the worker compiled');
  return check.layout;
}

export function generateRoute(app: FastifyInstance, renderer: Renderer, answers: AnswerLimits, signer?: PdfSigner): void {
  app.decorateRequest('compileMs', undefined);
  app.decorateRequest('outputRefused', undefined);
  app.post<{ Body: Job }>('/v1/pdf/generate', { onRequest: requireJsonWithinLimit }, async (request, reply) => {
    const job = request.body;
    const { body: bytes } = job;
    // The body is wiped when the response is done or abandoned; a pool buffer (body-pool.ts) goes back
    // once the job has settled too: only then has the pipe to the worker stopped reading from it.
    let settled: Promise<unknown> = Promise.resolve();
    reply.raw.once('close', () => {
      wipeBody(bytes);
      const giveBackBuffer = () => giveBack(bytes);
      settled.then(giveBackBuffer, giveBackBuffer);
    });
    // A body whose `data` was located, not read, is refused after its compile, with its exact layout (below).
    if (job.layout.signature && !signer && !job.layout.dataUnchecked) throw new HttpError(400, MESSAGES.noSigningIdentity);
    if (answers.full()) throw new PoolUnavailableError('answers_pending');
    const abort = new AbortController();
    // A client that leaves while its job waits frees its place in the queue ('close' also ends a finished response).
    reply.raw.once('close', () => reply.raw.writableFinished || abort.abort());
    const rendering = renderer.render(job, abort.signal);
    settled = rendering;
    const result = await rendering;
    reply.wipeAfterResponse(result.frame);
    request.compileMs = result.compileMs;
    reply.header('x-typst-version', result.typstVersion);
    if (result.kind === 'failed') {
      if (result.status === WORKER_STATUS.pdfTooLarge) request.outputRefused = 'pdf_too_large';
      return reply.code(result.status).type('application/json; charset=utf-8').send(result.errorBody);
    }
    if (result.warnings) reply.header('x-typst-warnings', result.warnings);
    const signature = result.relaid ? exactLayout(bytes).signature : job.layout.signature;
    if (signature && !signer) {
      result.frame.fill(0);
      throw new HttpError(400, MESSAGES.noSigningIdentity);
    }
    let pdf = result.pdf;
    if (signature && signer) {
      // Signed here, in the server, not in the worker: the key never goes where a template runs,
      // and the PDF is whole here (see finish/signature-signer.ts). The worker's copy goes at once.
      pdf = await signer.sign(result.pdf, bytes, signature);
      reply.wipeAfterResponse(pdf);
      result.frame.fill(0);
    }
    reply.code(200).headers({
      'content-type': 'application/pdf',
      'content-length': String(pdf.length),
      'content-disposition': 'inline; filename="document.pdf"',
    });
    return answers.send(request, reply, pdf, pdf === result.pdf ? result.frame.length : pdf.length);
  });
}
