/**
 * The `Expect` header. Node answers `Expect: 100-continue` with
 * `100 Continue` at once and anything else with 417, both before the API
 * has looked at the request. Here:
 *
 * - `100-continue`: `100 Continue` is sent only when the body is about to
 *   be read (sendContinue, from the body parser), that is once the key, the
 *   rate limit, the content type and the declared size have passed; a
 *   request refused before that gets its answer instead, and its connection
 *   closes after it (the client may or may not send the body then, so
 *   nothing after it on the connection could be read as a request).
 * - any other expectation: the API has none to meet, so the request is
 *   handled like any other.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * Requests that asked for `100 Continue` and have not been sent it yet. The
 * one piece of module state here: per-process wiring between Node's
 * 'checkContinue' event and the body parser, keyed weakly by request, so it
 * holds nothing past a request's life.
 */
const awaitingContinue = new WeakMap<IncomingMessage, ServerResponse>();

export function registerExpectations(app: FastifyInstance): void {
  const server: Server = app.server;
  server.on('checkExpectation', (request, response) => server.emit('request', request, response));
  server.on('checkContinue', (request, response) => {
    awaitingContinue.set(request, response);
    server.emit('request', request, response);
  });
  app.addHook('onSend', async (request, reply) => {
    if (awaitingContinue.delete(request.raw)) reply.header('connection', 'close');
  });
}

/** Sends `100 Continue` to a request that asked for it. */
export function sendContinue(request: IncomingMessage): void {
  const response = awaitingContinue.get(request);
  if (!response) return;
  awaitingContinue.delete(request);
  response.writeContinue();
}
