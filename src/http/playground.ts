/**
 * The template playground: a static page at GET /playground (GET / redirects
 * there) where a template, its data and assets are edited and previewed.
 *
 * Its files are served here from dist/playground/, which `npm run build`
 * makes from playground/ (scripts/build-playground.mjs), and so is the one
 * setting the page shows (service.json: the default engine's version). The page compiles through POST /v1/pdf/generate with the
 * key its user types, so it is authenticated and rate-limited like any
 * other client, and nothing of it is stored here. PLAYGROUND=false leaves
 * both routes out (404).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** dist/playground/, beside dist/src/ where this file is compiled to. */
const PLAYGROUND_ROOT = fileURLToPath(new URL('../../playground/', import.meta.url));

/**
 * The page's Content-Security-Policy: its own scripts, styles and workers
 * only, and requests to this origin only. No inline script or style
 * attribute is needed (CodeMirror and pdf.js set styles through the CSSOM,
 * which the policy does not govern), and pdf.js is told not to use eval.
 * blob: and data: images are what pdf.js may make of a PDF's images.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
};

/** Files under assets/ carry a hash of their content in their name, so they never change. */
const IMMUTABLE = /^\/playground\/assets\//;

export interface PlaygroundOptions {
  enabled: boolean;
  /** The exact Typst version of the service's default engine, which the page's engine menu names. */
  defaultTypst: string;
  /** Folder of the built page; defaults to dist/playground/. */
  root?: string;
}

export async function playgroundRoutes(app: FastifyInstance, options: PlaygroundOptions): Promise<void> {
  if (!options.enabled) return;
  const root = options.root ?? PLAYGROUND_ROOT;
  if (!existsSync(join(root, 'index.html'))) {
    // The API does not need the page: start without it, and say why it is missing.
    app.log.warn({ root }, 'playground not built (run npm run build); /playground is not served');
    return;
  }

  await app.register(async (scope) => {
    // Runs after the application's onSend hook, so these headers are the ones sent.
    scope.addHook('onSend', async (request, reply) => {
      reply.headers(SECURITY_HEADERS);
      if (reply.statusCode === 200 || reply.statusCode === 304) {
        // The page's files hold no request content, so unlike the API's answers they may be cached;
        // index.html and the examples are revalidated on each load (ETag), the hashed assets never.
        reply.header('cache-control', IMMUTABLE.test(request.url) ? 'public, max-age=31536000, immutable' : 'no-cache');
      }
    });
    await scope.register(fastifyStatic, {
      root,
      prefix: '/playground/',
      // A route for each file, not one for every path under the prefix: an answer to a path of the client's own
      // closes its connection (retention/kept-alive-heads.ts), and the page's files are known at start.
      wildcard: false,
      index: ['index.html'],
      preCompressed: true,
      cacheControl: false,
      serveDotFiles: false,
    });
    scope.get('/playground', (_request, reply) => reply.sendFile('index.html'));
    // What the page cannot know from its files: the operator's default engine (TYPST_VERSION).
    scope.get('/playground/service.json', async () => ({ typstDefault: options.defaultTypst }));
  });
  app.get('/', (_request, reply) => reply.redirect('/playground', 302));
}
