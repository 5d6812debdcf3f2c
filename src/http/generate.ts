/**
 * POST /v1/pdf/generate: hands the checked body to the render pool and
 * answers with the PDF bytes, or with the worker's error answer for a
 * template that failed. Errors of the pool are answered by the error
 * handler. Every buffer of the request and of the answer is wiped once
 * the response is sent.
 */
import type { FastifyInstance } from 'fastify';
import type { RenderInput, RenderResult } from '../render/pool.js';
import { requireJsonWithinLimit, type CheckedBody } from './json-body.js';

export interface Renderer {
  render(input: RenderInput, signal?: AbortSignal): Promise<RenderResult>;
}

/** The request body's schema, for the OpenAPI document (the body is checked byte by byte in src/body/). */
export const generateBodySchema = {
  type: 'object',
  required: ['data', 'template'],
  properties: {
    data: { type: 'object', description: 'Exposed to the template as the Typst dictionary `data`.' },
    template: { type: 'string', description: 'Typst markup.' },
  },
} as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** Time the worker spent compiling, for the request log. */
    compileMs?: number;
  }
}

export function generateRoute(app: FastifyInstance, renderer: Renderer): void {
  app.decorateRequest('compileMs', undefined);
  app.post<{ Body: CheckedBody }>('/v1/pdf/generate', { onRequest: requireJsonWithinLimit }, async (request, reply) => {
    const { bytes, layout } = request.body;
    reply.wipeAfterResponse(bytes);
    const abort = new AbortController();
    // A client that leaves while its job waits frees its place in the queue ('close' also ends a finished response).
    reply.raw.once('close', () => reply.raw.writableFinished || abort.abort());
    const result = await renderer.render({ body: bytes, layout }, abort.signal);
    reply.wipeAfterResponse(result.frame);
    request.compileMs = result.compileMs;
    if (result.kind === 'failed') {
      return reply.code(result.status).type('application/json; charset=utf-8').send(result.errorBody);
    }
    if (result.warnings) reply.header('x-typst-warnings', result.warnings);
    return reply
      .code(200)
      .headers({ 'content-type': 'application/pdf', 'content-disposition': 'inline; filename="document.pdf"' })
      .send(result.pdf);
  });
}
