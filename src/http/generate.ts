/**
 * POST /v1/pdf/generate: hands the checked body to the render pool and
 * answers with the PDF bytes, or with the worker's error answer for a
 * template that failed. Errors of the pool are answered by the error
 * handler. Every buffer of the request and of the answer is wiped once
 * the response is sent.
 */
import { METHODS } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { onAnswerEnd } from '../retention/answer-end.js';
import { giveBack } from '../retention/body-pool.js';
import type { Holdings } from '../retention/holdings.js';
import { wipe } from '../retention/wipe.js';
import { checkBody } from '../bytes/json-check.js';
import type { BodyLayout, Job } from '../bytes/layout.js';
import { CompileTimeoutError, MemoryLimitError, UnavailableError, WorkerCrashError } from '../render/errors.js';
import { httpStatus, type RenderResult, WORKER_STATUS } from '../render/job.js';
import type { AnswerLimits } from './answer-limits.js';
import { holderOf } from './auth.js';
import type { CrashLimit } from './crash-limit.js';
import { requireAcceptedBody } from './body.js';
import { HttpError } from './errors.js';
import type { PdfSigner } from '../finish/signature-signer.js';
import { MESSAGES } from '../messages.js';
import { ENGINE_VERSIONS, type EngineId } from '../engines.js';

export interface Renderer {
  /** The job's result; its bytes are handed to `held` (render/pool.ts). */
  render(job: Job, held: Holdings, signal?: AbortSignal): Promise<RenderResult>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Time the worker spent compiling, for the request log. */
    compileMs?: number;
  }
}

/**
 * The other methods on the route, every one Node's parser takes (CONNECT is
 * refused before any route: client-errors.ts): 405, before the key or the
 * body is looked at.
 */
const OTHER_METHODS = METHODS.filter((method) => method !== 'POST' && method !== 'CONNECT');

export function methodNotAllowedRoute(app: FastifyInstance): void {
  // Fastify routes the methods it knows, and answers the rest 404: they are made known here (bodyless: nothing parses
  // a body before the 405, and an unread body is drained and wiped after it).
  for (const method of OTHER_METHODS) if (!app.supportedMethods.includes(method)) app.addHttpMethod(method);
  app.route({
    method: [...OTHER_METHODS],
    url: '/v1/pdf/generate',
    onRequest: async () => {
      throw new HttpError(405, MESSAGES.methodNotAllowed, { allow: 'POST' });
    },
    handler: async () => undefined,
  });
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

/** What the route needs besides the pool: the crash limit, the default engine, and the signer if the service has an identity. */
export interface GenerateParts {
  crashes: CrashLimit;
  defaultEngine: EngineId;
  signer?: PdfSigner;
}

export function generateRoute(app: FastifyInstance, renderer: Renderer, answers: AnswerLimits, parts: GenerateParts): void {
  const { crashes, defaultEngine, signer } = parts;
  app.decorateRequest('compileMs', undefined);
  app.decorateRequest('outputRefused', undefined);
  const answer = async (request: FastifyRequest<{ Body: Job | Error }>, reply: FastifyReply): Promise<FastifyReply> => {
    // A body refused by the check, for its size or for room, comes as its answer (http/body.ts).
    if (request.body instanceof Error) throw request.body;
    const job = request.body;
    const { body: bytes } = job;
    // The body is wiped when the response is done or abandoned; a pool buffer (retention/body-pool.ts) goes back
    // once this handler has ended too (usedUntil, below): only then have the pipe to the worker and the signer
    // stopped reading from it. A client that leaves while its job waits frees its place in the queue
    // (an answer that ends once sent aborts nothing).
    reply.holdings.hold(bytes, () => giveBack(bytes));
    const abort = new AbortController();
    onAnswerEnd(reply.raw, () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    // A body whose `data` was located, not read, is refused after its compile, with its exact layout (below).
    if (job.layout.signature && !signer && !job.layout.dataUnchecked) throw new HttpError(400, MESSAGES.noSigningIdentity);
    if (answers.full(holderOf(request))) throw new UnavailableError('answers_pending');
    const rendering = renderer.render(job, reply.holdings, abort.signal);
    // A worker that died with the job (answered 500 by the error handler) counts toward the key's crash limit.
    rendering.catch((error: unknown) => error instanceof WorkerCrashError && crashes.count(request));
    let result: RenderResult;
    try {
      result = await rendering;
    } catch (error) {
      // A compile stopped at its time or memory limit ran on an engine too: its answer names it, as every compile's does.
      if (error instanceof CompileTimeoutError || error instanceof MemoryLimitError) {
        reply.header('x-typst-version', ENGINE_VERSIONS[job.layout.typst ?? defaultEngine]);
      }
      throw error;
    }
    // A PDF its worker holds and the answer did not take is dropped (the worker wipes it) once the answer is
    // over, and at once if it fails before it takes it. (Taken, it is not dropped: the order was given.)
    const held = result.kind === 'held' ? result.delivery : undefined;
    if (held) onAnswerEnd(reply.raw, () => held.drop());
    try {
      return await answerWith(request, reply, job, result);
    } catch (error) {
      held?.drop();
      throw error;
    }
  };
  /** The answer to a compile that came to `result`. */
  const answerWith = async (request: FastifyRequest, reply: FastifyReply, job: Job, result: RenderResult): Promise<FastifyReply> => {
    const { body: bytes, layout } = job;
    request.compileMs = result.compileMs;
    reply.header('x-typst-version', ENGINE_VERSIONS[result.engine]);
    if (result.kind === 'failed') {
      if (result.status === WORKER_STATUS.pdfTooLarge) request.outputRefused = 'pdf_too_large';
      return reply.code(httpStatus(result.status)).type('application/json; charset=utf-8').send(result.errorBody);
    }
    const { warnings, einvoiceWarnings } = result;
    if (warnings.length > 0) reply.header('x-typst-warnings', warnings.toString('latin1'));
    if (einvoiceWarnings.length > 0) reply.header('x-einvoice-warnings', einvoiceWarnings.toString('latin1'));
    const signature = result.relaid ? exactLayout(bytes).signature : layout.signature;
    if (signature && !signer) {
      wipe(warnings, einvoiceWarnings);
      if (result.kind === 'pdf') wipe(result.pdf);
      throw new HttpError(400, MESSAGES.noSigningIdentity);
    }
    const answerHead = (length: number) =>
      reply.code(200).headers({
        'content-type': 'application/pdf',
        'content-length': String(length),
        'content-disposition': 'inline; filename="document.pdf"',
      });
    if (result.kind === 'held' && !signature)
      return answers.sendHeld(request, answerHead(result.pdfBytes), result.pdfBytes, result.delivery);
    // The PDF whole, here: one its worker held comes by the pipe.
    let pdf = result.kind === 'held' ? await result.delivery.take() : result.pdf;
    if (signature && signer) {
      // Signed here, in the server, not in the worker: the key never goes where a template runs,
      // and the PDF is whole here (see finish/signature-signer.ts). The worker's copy goes at once.
      const unsigned = pdf;
      pdf = reply.holdings.hold(await signer.sign(unsigned, bytes, signature));
      wipe(unsigned, warnings, einvoiceWarnings);
    }
    return answers.send(request, answerHead(pdf.length), pdf);
  };
  app.post<{ Body: Job | Error }>('/v1/pdf/generate', { onRequest: [crashes.refuse, requireAcceptedBody] }, (request, reply) => {
    // The body's pool buffer, and the worker's result, which lies in a buffer its reader lends to one answer at a
    // time (render/frames.ts), go back once the response is done and this handler too: it may still be signing
    // after its client has left. Registered before the handler runs, since its client may have left already.
    let ended!: () => void;
    reply.holdings.usedUntil(new Promise<void>((resolve) => (ended = resolve)));
    return answer(request, reply).finally(ended);
  });
}
