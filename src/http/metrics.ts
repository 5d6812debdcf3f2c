/**
 * Prometheus metrics (prom-client), one registry per app so several apps
 * can live in one process. Labels carry only the route pattern, the method,
 * the status, a restart reason or a key's configured name: never anything
 * a request sent.
 *
 * Requests are counted in an onResponse hook; pool gauges are read from
 * the pool on each scrape; restarts come from the pool's 'restart' events.
 */
import { createServer, type Server } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { jsonErrorBody } from '../bytes/error-body.js';
import { answerHalfClosedClients, lastBeforeHalfClose } from './client-errors.js';
import { MESSAGES } from '../messages.js';
import type { AnswerLimits } from './answer-limits.js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics.js';
import { discardBody, wipeSocketReads } from '../retention/wipe-after-response.js';
import type { PoolStats, RestartReason } from '../render/pool.js';

export interface MetricsSource {
  stats(): PoolStats;
  on(event: 'restart', listener: (event: { reason: RestartReason }) => void): unknown;
  on(event: 'started', listener: (event: { seconds: number }) => void): unknown;
  on(event: 'pdf', listener: (event: { byWorker: number; byServer: number }) => void): unknown;
}

const PREFIX = 'typst_pdf_';
const RESTART_REASONS: RestartReason[] = ['timeout', 'memory', 'crash', 'killed', 'recycle', 'unresponsive'];
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** 256 B to 16 MB, in powers of four. */
const BYTES = [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216];

/** Label of a request's route: the route pattern, never the URL as sent. */
function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

export class ServiceMetrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: `${PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly requestDuration = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Time from request received to response sent, by route pattern',
    labelNames: ['route'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly compileDuration = new Histogram({
    name: `${PREFIX}compile_duration_seconds`,
    help: 'Time a worker spent compiling a document that succeeded',
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly requestBytes = new Histogram({
    name: `${PREFIX}http_request_size_bytes`,
    help: 'Declared request body sizes (Content-Length), by route pattern',
    labelNames: ['route'] as const,
    buckets: BYTES,
    registers: [this.registry],
  });

  readonly responseBytes = new Histogram({
    name: `${PREFIX}http_response_size_bytes`,
    help: 'Response body sizes, by route pattern',
    labelNames: ['route'] as const,
    buckets: BYTES,
    registers: [this.registry],
  });

  /** Requests answered 429, by the key's configured name ("anonymous" without a valid key). */
  readonly rateLimited = new Counter({
    name: `${PREFIX}rate_limited_requests_total`,
    help: 'Requests refused by the rate limit, by key name',
    labelNames: ['key'] as const,
    registers: [this.registry],
  });

  /** Requests answered 429 because their key's jobs crashed the engine too often (crash-limit.ts), by key name. */
  readonly crashLimited = new Counter({
    name: `${PREFIX}crash_limited_requests_total`,
    help: "Requests refused because their key's templates crashed the engine more than CRASHES_PER_MINUTE times in its window, by key name",
    labelNames: ['key'] as const,
    registers: [this.registry],
  });

  readonly workerRestarts = new Counter({
    name: `${PREFIX}worker_restarts_total`,
    help: 'Worker processes replaced, by reason (timeout, memory, crash, killed, recycle, unresponsive)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly unavailable = new Counter({
    name: `${PREFIX}unavailable_total`,
    help: 'Requests answered 503, by reason (queue_full, queue_timeout, client_gone, shutting_down, answers_pending, bodies_pending)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly outputRefused = new Counter({
    name: `${PREFIX}output_refused_total`,
    help: 'Answers refused or cut off, by reason (pdf_too_large: 422 past MAX_PDF_BYTES; reader_stalled: a client that took nothing past READER_STALL_TIMEOUT_MS)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly abandoned = new Counter({
    name: `${PREFIX}http_requests_abandoned_total`,
    help: 'Requests whose client left (closed or half-closed its side) before their body was whole, by route pattern',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

  readonly workerStart = new Histogram({
    name: `${PREFIX}worker_start_seconds`,
    help: 'Time from starting a worker process to its compiler being ready',
    buckets: [0.1, 0.2, 0.3, 0.4, 0.6, 1, 2, 5],
    registers: [this.registry],
  });

  readonly pdfBytes = new Counter({
    name: `${PREFIX}pdf_bytes_total`,
    help:
      "Bytes of PDFs answered, by who wrote them to the client's connection: the worker that made the PDF (from WORKER_WRITES_PDF_BYTES, 512 KiB by default), " +
      'or the server (smaller PDFs, signed ones, and what the connection of a slow reader did not take at once)',
    labelNames: ['written_by'] as const,
    registers: [this.registry],
  });

  constructor(source: MetricsSource, answers?: AnswerLimits) {
    collectProcessMetrics(this.registry, PREFIX);
    for (const reason of RESTART_REASONS) this.workerRestarts.inc({ reason }, 0);
    source.on('restart', ({ reason }) => this.workerRestarts.inc({ reason }));
    source.on('started', ({ seconds }) => this.workerStart.observe(seconds));
    for (const writtenBy of ['worker', 'server'] as const) this.pdfBytes.inc({ written_by: writtenBy }, 0);
    source.on('pdf', ({ byWorker, byServer }) => {
      this.pdfBytes.inc({ written_by: 'worker' }, byWorker);
      this.pdfBytes.inc({ written_by: 'server' }, byServer);
    });
    answers?.on('stalled', () => this.outputRefused.inc({ reason: 'reader_stalled' }));
    const gauge = (name: string, help: string, read: (stats: PoolStats) => number) =>
      new Gauge({
        name: `${PREFIX}${name}`,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(source.stats()));
        },
      });
    gauge('queue_depth', 'Jobs waiting for a worker', (s) => s.queued);
    gauge('queue_limit', 'Jobs allowed to wait for a worker', (s) => s.queueLimit);
    gauge('workers_busy', 'Workers compiling a document', (s) => s.busy);
    gauge('workers_idle', 'Workers ready and waiting for a job', (s) => s.ready - s.busy);
    gauge('workers_configured', 'Workers the pool keeps running', (s) => s.size);
    gauge('workers_spare', 'Spare workers started and waiting to replace one that ends', (s) => s.spare);
    gauge('pending_answer_bytes', 'Bytes of PDF answers held for clients that have not taken them yet', () => answers?.pendingBytes() ?? 0);
  }

  /** onResponse hook: counts the request. Reads only the route, status, sizes and timings. */
  observe = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const route = routeOf(request);
    const status = reply.statusCode;
    this.requests.inc({ method: request.method, route, status: String(status) });
    this.requestDuration.observe({ route }, reply.elapsedTime / 1000);
    if (request.compileMs !== undefined && status === 200) this.compileDuration.observe(request.compileMs / 1000);
    const sent = Number(request.headers['content-length']);
    if (Number.isFinite(sent) && sent > 0) this.requestBytes.observe({ route }, sent);
    const answered = Number(reply.getHeader('content-length'));
    if (Number.isFinite(answered)) this.responseBytes.observe({ route }, answered);
    if (request.crashLimited) this.crashLimited.inc({ key: request.apiKey?.name ?? 'anonymous' });
    else if (status === 429) this.rateLimited.inc({ key: request.apiKey?.name ?? 'anonymous' });
    if (request.unavailable) this.unavailable.inc({ reason: request.unavailable });
    if (request.outputRefused) this.outputRefused.inc({ reason: request.outputRefused });
  };

  /** onRequestAbort hook: counts a request whose client left mid-body (it has no answer, so onResponse never sees it). */
  observeAbandoned = async (request: FastifyRequest): Promise<void> => {
    this.abandoned.inc({ route: routeOf(request) });
  };

  contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Counts every request of `app`, and serves GET /metrics on it unless a separate listener does. */
export function registerMetrics(app: FastifyInstance, metrics: ServiceMetrics, options: { route: boolean }): void {
  app.addHook('onResponse', metrics.observe);
  app.addHook('onRequestAbort', metrics.observeAbandoned);
  if (options.route) {
    app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType()).send(await metrics.text()));
  }
}

/** A listener of its own for /metrics (METRICS_PORT), to keep it off the public port. */
export async function listenMetrics(metrics: ServiceMetrics, port: number, host: string): Promise<Server> {
  const server = createServer((request, response) => {
    // No request here has a body to read: whatever one sends is wiped as it comes.
    discardBody(request);
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end(jsonErrorBody(MESSAGES.notFound));
      return;
    }
    metrics.text().then(
      (body) =>
        response
          .writeHead(200, {
            'content-type': metrics.contentType(),
            'cache-control': 'no-store',
            ...(lastBeforeHalfClose(response) ? { connection: 'close' } : {}),
          })
          .end(body),
      () => response.writeHead(500).end(),
    );
  });
  answerHalfClosedClients(server);
  wipeSocketReads(server, (url) => url === '/metrics');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
