/**
 * POST /v1/pdf/generate: validates the body, hands it to the render pool
 * and answers with the PDF bytes. Errors are answered by the error handler.
 */
import type { FastifyInstance } from 'fastify';
import type { RenderInput, RenderResult } from '../render/pool.js';
import { requireJsonWithinLimit } from './json-body.js';

export interface Renderer {
  render(input: RenderInput, signal?: AbortSignal): Promise<RenderResult>;
}

export const generateBodySchema = {
  type: 'object',
  required: ['data', 'template'],
  properties: {
    data: { type: 'object', description: 'Exposed to the template as the Typst dictionary `data`.' },
    template: { type: 'string', description: 'Typst markup.' },
  },
} as const;

interface GenerateBody {
  data: Record<string, unknown>;
  template: string;
}

export function generateRoute(app: FastifyInstance, renderer: Renderer): void {
  app.post<{ Body: GenerateBody }>(
    '/v1/pdf/generate',
    { schema: { body: generateBodySchema }, onRequest: requireJsonWithinLimit },
    async (request, reply) => {
      const body = request.rawBody!;
      const abort = new AbortController();
      // A client that leaves while its job waits frees its place in the queue.
      reply.raw.once('close', () => abort.abort());
      let result: RenderResult;
      try {
        result = await renderer.render({ body, template: request.body.template }, abort.signal);
      } finally {
        body.fill(0);
        request.rawBody = undefined;
      }
      // Wiped once the response has been written (see the onResponse hook in app.ts).
      request.pdf = result.pdf;
      request.compileMs = result.compileMs;
      return reply
        .code(200)
        .headers({
          'content-type': 'application/pdf',
          'content-disposition': 'inline; filename="document.pdf"',
        })
        .send(result.pdf);
    },
  );
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The PDF being sent, wiped after the response. */
    pdf?: Buffer;
    /** Time the worker spent compiling, for the request log. */
    compileMs?: number;
  }
}
