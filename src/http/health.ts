/**
 * Liveness and readiness for load balancers and orchestrators. No auth;
 * neither touches the compiler.
 */
import type { FastifyInstance } from 'fastify';
import { HEALTH_MESSAGES } from '../messages.js';
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
  app.get('/healthz', async () => ({ status: HEALTH_MESSAGES.alive }));

  app.get('/readyz', async (_request, reply) => {
    const stats = { ...source.stats(), ...(source.rateLimit ? { rateLimit: source.rateLimit() } : {}), signing: source.signing ?? false };
    let reason: string | undefined;
    if (source.closing()) reason = HEALTH_MESSAGES.shuttingDown;
    else if (stats.ready === 0) reason = HEALTH_MESSAGES.noWorker;
    else if (stats.queued >= stats.queueLimit && stats.busy === stats.ready) reason = HEALTH_MESSAGES.queueFull;
    if (reason) return reply.code(503).send({ status: HEALTH_MESSAGES.unavailable, reason, ...stats });
    return { status: HEALTH_MESSAGES.ready, ...stats };
  });
}
