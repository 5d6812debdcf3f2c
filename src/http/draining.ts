/**
 * While the service shuts down, requests that still reach it (on
 * connections opened before) are answered 503 with Retry-After, so a
 * client or balancer retries elsewhere. /healthz and /readyz still answer:
 * the process is alive, and readiness reports the shutdown. The last answer
 * a connection owes while closing carries `Connection: close`, so a
 * keep-alive connection ends with it and shutdown need not wait for clients
 * to let go; an answer with pipelined requests queued behind it leaves the
 * connection open for their answers.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { MESSAGES } from '../messages.js';
import { HttpError, RETRY_AFTER_SECONDS } from './errors.js';

const ALWAYS_ANSWERED = new Set(['/healthz', '/readyz']);

export function refuseWhileClosing(app: FastifyInstance, closing: () => boolean): void {
  /** Requests received on each connection and not yet answered. */
  const owed = new WeakMap<Socket, number>();
  app.addHook('onRequest', async (request) => {
    const socket = request.raw.socket;
    owed.set(socket, (owed.get(socket) ?? 0) + 1);
    if (!closing() || ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
    request.unavailable = 'shutting_down';
    throw new HttpError(503, MESSAGES.unavailable, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  });
  app.addHook('onSend', async (request, reply) => {
    if (closing() && (owed.get(request.raw.socket) ?? 0) <= 1) reply.header('connection', 'close');
  });
  app.addHook('onResponse', async (request) => {
    const socket = request.raw.socket;
    owed.set(socket, (owed.get(socket) ?? 1) - 1);
  });
}
