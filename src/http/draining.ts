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
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { endOwingNothing } from '../retention/kept-alive-heads.js';
import { UnavailableError } from '../render/errors.js';

const ALWAYS_ANSWERED = new Set(['/healthz', '/readyz']);

/** For each app: its open connections, each with the requests received on it and not yet answered. */
const connectionsOf = new WeakMap<FastifyInstance, Map<Socket, { count: number }>>();

/**
 * Counts the answers each connection owes, and ends a connection once it
 * owes none while the service closes. Counted at Node's own `request` event,
 * ahead of Fastify's listener, and at each response's `finish`: an answer
 * no hook sees (a URL Fastify cannot route goes to `frameworkErrors`) or one
 * an early hook gives (400, 404, 429) is owed too, or the count would close
 * a connection with a pipelined answer still to come.
 */
export function countOwedAnswers(app: FastifyInstance, closing: () => boolean): void {
  const connections = new Map<Socket, { count: number }>();
  connectionsOf.set(app, connections);
  app.server.on('connection', (socket: Socket) => {
    connections.set(socket, { count: 0 });
    socket.once('close', () => connections.delete(socket));
  });
  app.server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const owed = connections.get(socket);
    if (owed === undefined) return;
    owed.count++;
    response.once('finish', () => {
      owed.count--;
      // An answer begun before the signal said keep-alive: its connection is ended here, not at the deadline,
      // with a FIN once all is written. Not destroyed: what the client sent meanwhile, unread, would make the
      // kernel send a reset, and the client lose what of the answer it had not yet read.
      if (closing() && owed.count <= 0) socket.end();
    });
  });
  // Said by an answer composed after the signal; one composed before it (queued behind a pipelined answer)
  // said keep-alive, and its connection is ended once it is written, above.
  app.addHook('onSend', async (request, reply) => {
    if (closing() && (connections.get(request.raw.socket)?.count ?? 0) <= 1) reply.header('connection', 'close');
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
  for (const [socket, owed] of connectionsOf.get(app) ?? []) if (owed.count <= 0) endOwingNothing(socket);
}

/** Requests that reach this hook while the service closes get 503 (see the top of this file). */
export function refuseWhileClosing(app: FastifyInstance, closing: () => boolean): void {
  app.addHook('onRequest', async (request) => {
    if (!closing() || ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
    throw new UnavailableError('shutting_down');
  });
}
