/**
 * POST /v1/pdf/generate: validates the body, hands it to the render pool
 * and answers with the PDF bytes. Errors are answered by the error handler.
 */
import type { FastifyInstance } from 'fastify';
import type { RenderInput, RenderResult } from '../render/pool.js';
import type { Warning } from '../render/protocol.js';
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

const WARNINGS_HEADER_MAX = 2000;

/**
 * `X-Typst-Warnings`: the count, then each warning as `line N: message`,
 * separated by ` | `; non-ASCII characters escaped as \uXXXX, cut to a bounded length.
 */
export function warningsHeader(warnings: Warning[]): string {
  const parts = warnings.map((w) => (w.line === null ? w.message : `line ${w.line}: ${w.message}`));
  const text = `${warnings.length}; ${parts.join(' | ')}`.replace(
    /[^\x20-\x7e]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return text.length > WARNINGS_HEADER_MAX ? `${text.slice(0, WARNINGS_HEADER_MAX - 3)}...` : text;
}

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
      if (result.warnings.length > 0) reply.header('x-typst-warnings', warningsHeader(result.warnings));
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
