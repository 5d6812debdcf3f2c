/**
 * Builds the HTTP application from its parts; main.ts gives it a socket.
 *
 * The steps of a request, in the order they run (hooks of one kind run in
 * the order they are added below; README's "How it works" shows the same):
 *
 *   onRequest  1. identify the key (http/auth.ts identifyKey)          /v1 only
 *              2. count it: 429 past the limit (http/rate-limit.ts)   /v1 only
 *              3. unknown path: 404, before the body is read
 *              4. shutting down: 503 (http/draining.ts)               not /healthz, /readyz
 *              5. no valid key: 401 (http/auth.ts requireKey)         the /v1 routes
 *              6. content type, encoding, declared size: 415, 413     POST /v1/pdf/generate
 *                 (http/json-body.ts requireJsonWithinLimit)
 *   body       received into owned buffers and checked byte by byte: 400, 413
 *              (http/json-body.ts, src/body/)
 *   handler    a signature asked of a service without an identity: 400;
 *              answers held for readers at their bound: 503; the render pool:
 *              503, 422, 500, or the worker's PDF or 400/422 (http/generate.ts,
 *              render/pool.ts, render/worker.ts, render/engine.ts); the PDF
 *              signed when asked (finish/signature-signer.ts)
 *   onSend     rate-limit headers; no-store, nosniff, request id; Connection: close
 *              while draining; an unread body drained and wiped (http/wipe.ts)
 *   onResponse the log line; metrics; draining's count of answers owed
 *   after      buffers of the request and answer wiped when the response closes
 *              (http/wipe.ts), and Node's read buffer scrubbed (read-buffer-scrub.ts)
 *
 * Every error's answer is made in http/errors.ts, its words in messages.ts.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DEFAULT_MAX_IMAGE_PIXELS, MAX_BODY_BYTES } from './config.js';
import { identifyKey, requireKey } from './http/auth.js';
import { clientErrorHandler, frameworkErrorHandler } from './http/client-errors.js';
import { errorHandler, HttpError, sendError } from './http/errors.js';
import { ignoreUnknownExpectations } from './http/expect.js';
import { fontsRoute, type FontSource } from './http/fonts.js';
import { AnswerLimits } from './http/answer-limits.js';
import { generateRoute, type Renderer } from './http/generate.js';
import { healthRoutes, type HealthSource } from './http/health.js';
import { registerJsonBody } from './http/json-body.js';
import type { KeyStore } from './http/keys.js';
import { registerRateLimit, type RateLimitOptions } from './http/rate-limit.js';
import { refuseWhileClosing } from './http/draining.js';
import { registerMetrics, type ServiceMetrics } from './http/metrics.js';
import { openApiRoute } from './http/openapi.js';
import { playgroundRoutes } from './http/playground.js';
import { registerWipe, wipeSocketReads } from './http/wipe.js';
import { MESSAGES } from './messages.js';
import type { PdfSigner } from './finish/signature-signer.js';

export interface AppOptions {
  keys: KeyStore;
  renderer: Renderer;
  fonts: FontSource;
  health: HealthSource;
  logger: Logger;
  compileTimeoutMs: number;
  /** Bounds on answers waiting for their readers; unset: no bound on their total, a 30 s stall cut-off. */
  answers?: AnswerLimits;
  rateLimit: Omit<RateLimitOptions, 'keys'>;
  /** Proxies whose X-Forwarded-For gives the client address (TRUST_PROXY). */
  trustProxy?: boolean | string[];
  /** Request metrics; GET /metrics is served here unless `metricsOnOwnPort`. */
  metrics?: ServiceMetrics;
  metricsOnOwnPort?: boolean;
  /** Serve the template playground at /playground (PLAYGROUND). */
  playground?: boolean;
  /** An image asset declaring more pixels is refused before any compile (MAX_IMAGE_PIXELS). */
  maxImagePixels?: number;
  /** Signs the PDFs whose request asks for it (`pdf.signature`); unset: such a request gets 400. */
  signer?: PdfSigner;
}

/**
 * Time a client has to send its whole request. Fastify's default is no limit:
 * a client that sent headers and then stalled would hold its connection
 * forever. Node enforces it from a periodic check, so the cut comes 60-90 s in.
 */
const REQUEST_TIMEOUT_MS = 60_000;

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    // The request log line is written in onResponse below, without URLs' query strings or bodies.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    requestTimeout: REQUEST_TIMEOUT_MS,
    // genReqId reads X-Request-Id itself: with requestIdHeader set, Fastify would take any value unchecked.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Requests that arrive while closing are answered by http/draining.ts, with Retry-After and the 503 message.
    return503OnClosing: false,
    trustProxy: options.trustProxy ?? false,
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
  });

  const answers = options.answers ?? new AnswerLimits({ maxPendingBytes: 0, readerStallMs: 30_000 });
  app.decorateRequest('apiKey', undefined);
  app.decorateRequest('rateLimitUsage', undefined);
  app.decorateRequest('unavailable', undefined);
  ignoreUnknownExpectations(app.server);
  wipeSocketReads(app.server);
  registerWipe(app);
  registerJsonBody(app, { maxImagePixels: options.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS });
  app.setErrorHandler(errorHandler(options.compileTimeoutMs));
  app.setNotFoundHandler((_request, reply) => sendError(reply, new HttpError(404, MESSAGES.notFound)));
  // onRequest steps 1 to 4 (see the table above); 5 and 6 belong to the /v1 routes below.
  app.addHook('onRequest', identifyKey(options.keys));
  const rateLimitHealth = registerRateLimit(app, { keys: options.keys, ...options.rateLimit });
  // Fastify would otherwise read and parse an unknown path's body before answering 404.
  app.addHook('onRequest', async (request) => {
    if (request.is404) throw new HttpError(404, MESSAGES.notFound);
  });
  refuseWhileClosing(app, options.health.closing);

  app.addHook('onSend', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    reply.header('x-request-id', request.id);
  });

  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        compileMs: request.compileMs === undefined ? undefined : Math.round(request.compileMs * 10) / 10,
        key: request.apiKey?.name,
        unavailable: request.unavailable,
        outputRefused: request.outputRefused,
        requestBytes: Number(request.headers['content-length']) || undefined,
        responseBytes: Number(reply.getHeader('content-length')) || undefined,
      },
      'request',
    );
  });

  healthRoutes(app, { ...options.health, rateLimit: rateLimitHealth });
  const metricsRoute = options.metrics !== undefined && !options.metricsOnOwnPort;
  if (options.metrics) registerMetrics(app, options.metrics, { route: metricsRoute });
  openApiRoute(app, { metricsRoute });
  await playgroundRoutes(app, { enabled: options.playground ?? false });

  await app.register(async (api) => {
    api.addHook('onRequest', requireKey(options.keys));
    generateRoute(api, options.renderer, answers, options.signer);
    fontsRoute(api, options.fonts);
  });

  return app;
}
