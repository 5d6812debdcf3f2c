/**
 * While the service shuts down, requests that still reach it (on
 * connections opened before) are answered 503 with Retry-After, so a
 * client or balancer retries elsewhere. /healthz and /readyz still answer:
 * the process is alive, and readiness reports the shutdown.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MESSAGES } from '../messages.js';
import { HttpError, RETRY_AFTER_SECONDS } from './errors.js';

const ALWAYS_ANSWERED = new Set(['/healthz', '/readyz']);

export function refuseWhileClosing(app: FastifyInstance, closing: () => boolean): void {
  app.addHook('onRequest', async (request: FastifyRequest, _reply: FastifyReply) => {
    if (!closing() || ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
    throw new HttpError(503, MESSAGES.unavailable, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  });
}
