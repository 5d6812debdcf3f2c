/**
 * Liveness and readiness for load balancers and orchestrators. No auth;
 * neither touches the compiler.
 */
import type { FastifyInstance } from 'fastify';
import type { PoolStats } from '../render/pool.js';
import type { RateLimitHealth } from './rate-limit-counter.js';

export interface HealthSource {
  stats(): PoolStats;
  /** True once shutdown has begun. */
  closing(): boolean;
  /** Where rate-limit counters live; not shared (Redis unreachable) still means ready: the limit fails open. */
  rateLimit?(): RateLimitHealth;
  /** Whether a signing identity is loaded (`pdf.signature` can be asked for): the playground reads it. */
  signing?: boolean;
}

export function healthRoutes(app: FastifyInstance, source: HealthSource): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const stats = { ...source.stats(), ...(source.rateLimit ? { rateLimit: source.rateLimit() } : {}), signing: source.signing ?? false };
    let reason: string | undefined;
    if (source.closing()) reason = 'shutting down';
    else if (stats.ready === 0) reason = 'no worker is ready';
    else if (stats.queued >= stats.queueLimit && stats.busy === stats.ready) reason = 'render queue is full';
    if (reason) return reply.code(503).send({ status: 'unavailable', reason, ...stats });
    return { status: 'ready', ...stats };
  });
}
