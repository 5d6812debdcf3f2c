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

/** For each app: its open connections, each with the requests received on it and not yet answered. */
const connectionsOf = new WeakMap<FastifyInstance, Map<Socket, number>>();

/**
 * Counts the answers each connection owes, and ends a connection once it
 * owes none while the service closes. Added before every other hook: an
 * answer an earlier hook gives (400, 404, 429) is owed too, or the count
 * would close a connection with a pipelined answer still to come.
 */
export function countOwedAnswers(app: FastifyInstance, closing: () => boolean): void {
  const owed = new Map<Socket, number>();
  connectionsOf.set(app, owed);
  app.server.on('connection', (socket: Socket) => {
    owed.set(socket, 0);
    socket.once('close', () => owed.delete(socket));
  });
  app.addHook('onRequest', async (request) => {
    const socket = request.raw.socket;
    if (owed.has(socket)) owed.set(socket, owed.get(socket)! + 1);
  });
  app.addHook('onSend', async (request, reply) => {
    if (closing() && (owed.get(request.raw.socket) ?? 0) <= 1) reply.header('connection', 'close');
  });
  app.addHook('onResponse', async (request) => {
    const socket = request.raw.socket;
    const left = owed.get(socket);
    if (left === undefined) return;
    owed.set(socket, left - 1);
    // An answer begun before the signal said keep-alive: its connection is ended here, not at the deadline, with
    // a FIN once all is written. Not destroyed: what the client sent meanwhile, unread, would make the kernel
    // send a reset, and the client lose what of the answer it had not yet read.
    if (closing() && left <= 1) socket.end();
  });
}

/**
 * At the signal: every connection that owes no answer ends, once what it
 * is writing is written: an idle keep-alive one, one that has sent
 * nothing, one whose request head is not whole yet. Node's
 * closeIdleConnections counts only the first kind, and the others held a
 * stop until SHUTDOWN_TIMEOUT_MS.
 */
export function closeConnectionsOwingNothing(app: FastifyInstance): void {
  for (const [socket, count] of connectionsOf.get(app) ?? []) if (count <= 0) socket.destroySoon();
}

/** Requests that reach this hook while the service closes get 503 (see the top of this file). */
export function refuseWhileClosing(app: FastifyInstance, closing: () => boolean): void {
  app.addHook('onRequest', async (request) => {
    if (!closing() || ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
    request.unavailable = 'shutting_down';
    throw new HttpError(503, MESSAGES.unavailable, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  });
}
