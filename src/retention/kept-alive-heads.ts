/**
 * Node's HTTP parser copies into native memory of its own the URL of every
 * request once its head is read, and each piece of a head that came in more
 * than one read (a header's name or value: a key a network cut in two). It
 * frees a copy only when the connection's next message begins (a header's
 * copy when a later head fills that header's slot), or when the parser is
 * destroyed with its connection (http-parsers.ts). So a connection kept
 * alive held, for as long as it stayed idle (up to the keep-alive timeout,
 * 72 s), its last request's query string, a path the service does not have,
 * or the pieces of a head.
 *
 * An answer therefore closes its connection (`Connection: close`) when the
 * parser would keep something of its request: a URL other than one of the
 * service's own paths (a query, a path it does not have, one it cannot
 * decode), a head that came in more than one read, or a body in chunks
 * (whose trailer, a head of its own after the body, the parser copies the
 * same way, and which may come after the answer). A usual head fits in one
 * read (one TCP segment), and clients send a body of known length with its
 * length, so well-made clients keep their connections.
 *
 * Which read a head began in: the parser calls back when a message begins
 * (its kOnMessageBegin, which Node's server leaves unset) and after each
 * read it executes (kOnExecute, Node's own, wrapped here; `execute` where
 * JavaScript feeds the parser itself). Node has no public way to either:
 * they are reached through the parser's module (`_http_common`, Node 22 and
 * 24). Where they are missing, every answer closes its connection.
 */
import { createRequire } from 'node:module';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { isParserScrub } from './read-buffer-scrub.js';

type Callback = (this: unknown, ...args: unknown[]) => unknown;
type Parser = Record<number | string, unknown>;

const { HTTPParser } = createRequire(import.meta.url)('_http_common') as {
  HTTPParser?: { kOnMessageBegin?: unknown; kOnExecute?: unknown; prototype?: { execute?: unknown } };
};
const ON_MESSAGE_BEGIN = HTTPParser?.kOnMessageBegin;
const ON_EXECUTE = HTTPParser?.kOnExecute;

/** Of each connection: the reads its parser has executed, and the read (counted from 1) its latest head began in. */
interface Reads {
  done: number;
  headBegan: number;
}
const readsOf = new WeakMap<Socket, Reads>();

/** Counts `socket`'s reads and notes where each head begins; false if its parser cannot be followed. */
function followReads(socket: Socket): boolean {
  const parser = (socket as Socket & { parser?: Parser }).parser;
  if (typeof ON_MESSAGE_BEGIN !== 'number' || typeof ON_EXECUTE !== 'number' || !parser) return false;
  const onExecute = parser[ON_EXECUTE];
  // The class's own: a parser Node reuses (where it keeps a pool) would otherwise wrap a wrapper each time.
  const execute = HTTPParser?.prototype?.execute;
  const onMessageBegin = parser[ON_MESSAGE_BEGIN];
  if (typeof onExecute !== 'function' || typeof execute !== 'function') return false;
  const reads: Reads = { done: 0, headBegan: 1 };
  // After each read the parser executed itself (the connection's socket consumed by it, as Node's server does).
  parser[ON_EXECUTE] = function (this: unknown, ...args: unknown[]) {
    reads.done++;
    return (onExecute as Callback).apply(this, args);
  };
  // Where JavaScript hands it the reads instead (the socket no longer consumed).
  parser.execute = function (this: unknown, ...args: unknown[]) {
    try {
      return (execute as Callback).apply(this, args);
    } finally {
      reads.done++;
    }
  };
  parser[ON_MESSAGE_BEGIN] = function (this: unknown, ...args: unknown[]) {
    reads.headBegan = reads.done + 1;
    return typeof onMessageBegin === 'function' ? (onMessageBegin as Callback).apply(this, args) : undefined;
  };
  readsOf.set(socket, reads);
  return true;
}

/** Whether `request`'s head began in an earlier read than the one that completed it (the read under way). */
function headInPieces(request: IncomingMessage): boolean {
  const reads = readsOf.get(request.socket);
  return reads === undefined || reads.headBegan <= reads.done;
}

/**
 * The service's own paths, from its routes: a URL that is one of them, or
 * begins a route's path with a wildcard or parameter in it (whose misses
 * are 404s), holds nothing of the client's besides what the route serves.
 */
class OwnPaths {
  private readonly exact = new Set<string>();
  private readonly prefixes: string[] = [];

  add(url: string): void {
    const open = url.search(/[*:]/);
    if (open < 0) this.exact.add(url);
    else if (!this.prefixes.includes(url.slice(0, open))) this.prefixes.push(url.slice(0, open));
  }

  has(url: string): boolean {
    return this.exact.has(url) || (!url.includes('?') && this.prefixes.some((prefix) => url.startsWith(prefix)));
  }
}

/**
 * Makes every answer whose request the parser would keep something of close
 * its connection. Called before the routes are added.
 */
export function closeConnectionsThatKeepHeads(app: FastifyInstance): void {
  const server: Server = app.server;
  const own = new OwnPaths();
  app.addHook('onRoute', (route) => own.add(route.url));
  server.on('connection', (socket: Socket) => {
    if (!isParserScrub(socket)) followReads(socket);
  });
  // Ahead of Fastify's own listener, which answers some requests (a URL it cannot decode) at once.
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    if (headInPieces(request) || !own.has(request.url ?? '') || request.headers['transfer-encoding'] !== undefined) {
      response.shouldKeepAlive = false;
    }
  });
  // A miss under a route's wildcard (a file the page does not have, say): its path is the client's own.
  app.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode === 404) reply.raw.shouldKeepAlive = false;
  });
}
