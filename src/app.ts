/**
 * Builds the HTTP application from its parts; main.ts gives it a socket.
 *
 * The steps of a request, in the order they run (hooks of one kind run in
 * the order they are added below; docs/how-it-works.md shows the same):
 *
 *   onRequest  first: the answers each connection owes, counted (http/draining.ts)
 *              1. identify the key (http/auth.ts identifyKey)          /v1 only
 *              2. count it: 429 past the limit (http/rate-limit.ts)   /v1 only
 *                 no Host, two: 400; HTTP/2.0 and up: 505 (http/client-errors.ts requireHttp1Head)
 *              3. unknown path: 404, before the body is read; another method
 *                 than POST on /v1/pdf/generate: 405 (http/generate.ts)
 *              4. shutting down: 503 (http/draining.ts)               not /healthz, /readyz
 *              5. no valid key: 401 (http/auth.ts requireKey)         the /v1 routes
 *              6. a key whose requests crashed the engine too often:  POST /v1/pdf/generate
 *                 429 (http/crash-limit.ts)
 *              7. content type, encoding, declared size: 415, 413     POST /v1/pdf/generate
 *                 (http/body.ts requireAcceptedBody)
 *   body       503 past the bodies being received or checked, or the key's half of them (request/pending-bodies.ts); then
 *              `100 Continue` if asked for (http/expect.ts), received into owned
 *              buffers and checked byte by byte: 400, 408, 413 (http/body.ts,
 *              src/request/, src/bytes/); broken framing or a client gone mid-body stops it
 *              (http/client-errors.ts)
 *   handler    a signature asked of a service without an identity: 400;
 *              answers held for readers at their bound, or the key's half: 503; the render pool:
 *              503, 422, 500, or the worker's PDF or 400/422 (http/generate.ts,
 *              render/pool.ts, render/worker.ts, render/engine.ts); the PDF
 *              signed when asked (finish/signature-signer.ts)
 *   onSend     rate-limit headers; no-store, nosniff, request id; Connection: close
 *              while draining; an unread body drained and wiped (retention/wipe-after-response.ts)
 *   onResponse the log line; metrics; draining's count of answers owed
 *   after      buffers of the request and answer wiped when the response closes
 *              (retention/wipe-after-response.ts), and Node's read buffer scrubbed (retention/read-buffer-scrub.ts)
 *
 * Every error's answer is made in http/errors.ts, its words in messages.ts.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { DEFAULT_MAX_IMAGE_PIXELS, MAX_BODY_BYTES } from './api-values.js';
import { DEFAULT_BODY_TIMEOUT_MS, DEFAULT_CRASHES_PER_MINUTE, DEFAULT_READER_STALL_TIMEOUT_MS } from './config.js';
import { identifyKey, requireKey } from './http/auth.js';
import { PendingBodies } from './request/pending-bodies.js';
import {
  answerHalfClosedClients,
  clientErrorHandler,
  frameworkErrorHandler,
  lastBeforeHalfClose,
  refuseConnect,
  requireHttp1Head,
} from './http/client-errors.js';
import { errorHandler, HttpError, sendError } from './http/errors.js';
import { registerExpectations } from './http/expect.js';
import { fontsRoute, type FontSource } from './http/fonts.js';
import { AnswerLimits } from './http/answer-limits.js';
import { CrashLimit } from './http/crash-limit.js';
import { generateRoute, methodNotAllowedRoute, type Renderer } from './http/generate.js';
import { healthRoutes, type HealthSource } from './http/health.js';
import { registerBodyParsers } from './http/body.js';
import type { KeyStore } from './http/keys.js';
import { registerRateLimit, type RateLimitOptions } from './http/rate-limit.js';
import { countOwedAnswers, refuseWhileClosing } from './http/draining.js';
import { registerMetrics, type ServiceMetrics } from './http/metrics.js';
import { openApiRoute } from './http/openapi.js';
import { playgroundRoutes } from './http/playground.js';
import { loggedRequestId, sentRequestId } from './http/request-id.js';
import { registerWipe, wipeSocketReads } from './retention/wipe-after-response.js';
import { routePaths } from './retention/kept-alive-heads.js';
import { MESSAGES } from './messages.js';
import { DEFAULT_ENGINE, ENGINE_VERSIONS, type EngineId } from './engines.js';
import type { PdfSigner } from './finish/signature-signer.js';

export interface AppOptions {
  keys: KeyStore;
  renderer: Renderer;
  fonts: FontSource;
  health: HealthSource;
  logger: Logger;
  compileTimeoutMs: number;
  /** Engine crashes a key may cause per rate-limit window (CRASHES_PER_MINUTE, 5 unless set); past it, 429. */
  crashesPerMinute?: number;
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
  /** Bodies being received or checked, bounded in total and per key (MAX_PENDING_BODIES_MB); unset: no bound. */
  bodies?: PendingBodies;
  /** A body with no byte for this long is answered 408 (BODY_TIMEOUT_MS); unset: 30 s. */
  bodyTimeoutMs?: number;
  /** The engine of a request that names none (TYPST_VERSION), for the answers of compiles stopped at a limit. */
  defaultEngine?: EngineId;
  /** Signs the PDFs whose request asks for it (`pdf.signature`); unset: such a request gets 400. */
  signer?: PdfSigner;
}

/**
 * Time a client has to send its whole request, head and body: twice the
 * body's idle timeout. Without it (Fastify's default is no limit) a client
 * that sends a byte now and then would never trip the idle timeout and
 * hold its connection forever. Node checks it every quarter of the idle
 * timeout (at most every 30 s), so the cut (408) comes up to a quarter
 * late.
 */
const REQUEST_TIMES_BODY_TIMEOUT = 2;
const CHECKS_PER_BODY_TIMEOUT = 4;

/** Fastify's schema compilers, replaced (see buildApp): no route of this service has a schema to compile. */
function noSchemaCompiler(): never {
  throw new Error('a route has a schema to compile: this service compiles none (bodies are checked byte by byte)');
}

/** The headers every answer has: no caching, no sniffing, the request's id. */
function setAnswerHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-request-id', sentRequestId(request.headers) ?? request.id);
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const bodies = options.bodies ?? new PendingBodies(0);
  const defaultEngine = options.defaultEngine ?? DEFAULT_ENGINE;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const requestTimeout = REQUEST_TIMES_BODY_TIMEOUT * bodyTimeoutMs;
  const app = Fastify({
    http: {
      // A request without Host is answered by requireHttp1Head, with the API's error body.
      requireHostHeader: false,
      headersTimeout: Math.min(60_000, requestTimeout),
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(bodyTimeoutMs / CHECKS_PER_BODY_TIMEOUT)),
    },
    loggerInstance: options.logger as FastifyBaseLogger,
    // The request log line is written in onResponse below, without URLs' query strings or bodies.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    requestTimeout,
    // The logged id (http/request-id.ts): with requestIdHeader set, Fastify would log the client's value unchecked.
    requestIdHeader: false,
    genReqId: (request) => loggedRequestId(request.headers),
    // Requests that arrive while closing are answered by http/draining.ts, with Retry-After and the 503 message.
    return503OnClosing: false,
    trustProxy: options.trustProxy ?? false,
    // No route validates or serializes by a schema (a body is checked byte by byte, every answer is bytes or an error
    // body): Fastify's compilers (ajv and fast-json-stringify, 1.5 MB of the server's heap) are never loaded, and a
    // route given a schema to compile stops the start.
    schemaController: { compilersFactory: { buildValidator: () => noSchemaCompiler, buildSerializer: () => noSchemaCompiler } },
    clientErrorHandler: clientErrorHandler(bodies),
    // Answered outside every hook: the headers every answer has are set here.
    frameworkErrors: (error, request, reply) => {
      setAnswerHeaders(request, reply);
      frameworkErrorHandler(error, request, reply);
    },
  });

  const answers = options.answers ?? new AnswerLimits({ maxPendingBytes: 0, readerStallMs: DEFAULT_READER_STALL_TIMEOUT_MS });
  app.decorateRequest('apiKey', undefined);
  app.decorateRequest('rateLimitUsage', undefined);
  app.decorateRequest('unavailable', undefined);
  app.decorateRequest('crashLimited', undefined);
  registerExpectations(app);
  refuseConnect(app.server);
  answerHalfClosedClients(app.server);
  // routePaths before the routes: it learns each as it is added.
  wipeSocketReads(app.server, routePaths(app));
  registerWipe(app);
  registerBodyParsers(app, {
    maxImagePixels: options.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS,
    bodies,
    bodyTimeoutMs,
  });
  app.setErrorHandler(errorHandler(options.compileTimeoutMs));
  app.setNotFoundHandler((_request, reply) => sendError(reply, new HttpError(404, MESSAGES.notFound)));
  // onRequest steps 1 to 4 (see the table above); 5 to 7 belong to the /v1 routes below.
  countOwedAnswers(app, options.health.closing);
  app.addHook('onRequest', identifyKey(options.keys));
  const rateLimitHealth = await registerRateLimit(app, { keys: options.keys, ...options.rateLimit });
  // Counted first, as every request is: its answer carries the rate-limit headers too.
  app.addHook('onRequest', requireHttp1Head);
  // Fastify would otherwise read and parse an unknown path's body before answering 404.
  app.addHook('onRequest', async (request) => {
    if (request.is404) throw new HttpError(404, MESSAGES.notFound);
  });
  refuseWhileClosing(app, options.health.closing);

  app.addHook('onSend', async (request, reply) => {
    if (lastBeforeHalfClose(reply.raw)) reply.header('connection', 'close');
    setAnswerHeaders(request, reply);
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
  openApiRoute(app, { metricsRoute, defaultEngine });
  await playgroundRoutes(app, { enabled: options.playground ?? false, defaultTypst: ENGINE_VERSIONS[defaultEngine] });

  methodNotAllowedRoute(app);
  await app.register(async (api) => {
    api.addHook('onRequest', requireKey(options.keys));
    generateRoute(api, options.renderer, answers, {
      crashes: new CrashLimit(options.crashesPerMinute ?? DEFAULT_CRASHES_PER_MINUTE),
      defaultEngine,
      signer: options.signer,
    });
    fontsRoute(api, options.fonts);
  });

  return app;
}
