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
 * server's own paths exactly (a query, a path it does not have, one it
 * cannot decode), a head that came in more than one read, or a body in
 * chunks (whose trailer, a head of its own after the body, the parser copies
 * the same way, and which may come after the answer). A client that sends
 * a head of one TCP segment (about 1,400 bytes across a network) to the
 * API's own URLs, its body with a Content-Length, keeps its connection.
 *
 * Which read a head began in: the parser calls back when a message begins
 * (its kOnMessageBegin, which Node's server leaves unset) and after each
 * read it executes (kOnExecute, Node's own, wrapped here; `execute` where
 * JavaScript feeds the parser itself). Node has no public way to either:
 * they are reached through the parser's module (`_http_common`, Node 22 and
 * 24). Where they are missing, every answer closes its connection (main.ts
 * says so at start).
 */
import { createRequire } from 'node:module';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { isParserScrub } from './read-buffer-scrub.js';

type Callback = (this: unknown, ...args: unknown[]) => unknown;
type Parser = Record<number | string, unknown>;

const { HTTPParser } = createRequire(import.meta.url)('_http_common') as {
  HTTPParser?: { kOnMessageBegin?: unknown; kOnExecute?: unknown; prototype?: { execute?: unknown } };
};
const ON_MESSAGE_BEGIN = HTTPParser?.kOnMessageBegin;
const ON_EXECUTE = HTTPParser?.kOnExecute;
// The class's own: a parser Node reuses (where it keeps a pool) would otherwise wrap a wrapper each time.
const PARSER_EXECUTE = HTTPParser?.prototype?.execute;

/** Whether this Node.js lets the server follow its parsers' reads; where not, every answer closes its connection. */
export const READS_FOLLOWED =
  typeof ON_MESSAGE_BEGIN === 'number' && typeof ON_EXECUTE === 'number' && typeof PARSER_EXECUTE === 'function';

/** Of each connection: the reads its parser has executed, and the read (counted from 1) its latest head began in. */
interface Reads {
  done: number;
  headBegan: number;
}
const readsOf = new WeakMap<Socket, Reads>();

/** Counts `socket`'s reads and notes where each head begins, where its parser can be followed. */
function followReads(socket: Socket): void {
  const parser = (socket as Socket & { parser?: Parser }).parser;
  if (!READS_FOLLOWED || !parser) return;
  const onExecute = parser[ON_EXECUTE as number];
  const onMessageBegin = parser[ON_MESSAGE_BEGIN as number];
  if (typeof onExecute !== 'function') return;
  const reads: Reads = { done: 0, headBegan: 1 };
  // After each read the parser executed itself (the connection's socket consumed by it, as Node's server does).
  parser[ON_EXECUTE as number] = function (this: unknown, ...args: unknown[]) {
    reads.done++;
    return (onExecute as Callback).apply(this, args);
  };
  // Where JavaScript hands it the reads instead (the socket no longer consumed).
  parser.execute = function (this: unknown, ...args: unknown[]) {
    try {
      return (PARSER_EXECUTE as Callback).apply(this, args);
    } finally {
      reads.done++;
    }
  };
  parser[ON_MESSAGE_BEGIN as number] = function (this: unknown, ...args: unknown[]) {
    reads.headBegan = reads.done + 1;
    // Node's server sets none of its own; one a later Node.js sets still runs.
    return typeof onMessageBegin === 'function' ? (onMessageBegin as Callback).apply(this, args) : undefined;
  };
  readsOf.set(socket, reads);
}

/** Whether `request`'s head began in an earlier read than the one that completed it (the read under way). */
function headInPieces(request: IncomingMessage): boolean {
  const reads = readsOf.get(request.socket);
  return reads === undefined || reads.headBegan <= reads.done;
}

/** Whether a URL, whole (any query included), is one of a server's own paths. */
export type OwnPath = (url: string) => boolean;

/**
 * A Fastify app's own paths: its routes' paths, as they are added (so this
 * is called before the routes are). A route with a parameter or a wildcard
 * has none: every URL it answers is partly the client's.
 */
export function routePaths(app: FastifyInstance): OwnPath {
  const own = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (!/[*:]/.test(route.url)) own.add(route.url);
  });
  return (url) => own.has(url);
}

/**
 * Makes every answer of `server` whose request the parser would keep
 * something of close its connection. `stringsMayOutlive`, if given, is told
 * of each request whose URL is none of `ownPath`'s, or whose head came in
 * pieces (Node may make strings of its headers before the request starts),
 * before the request's other listeners run (the heap scrub's: heap-scrub.ts).
 */
export function closeConnectionsThatKeepHeads(server: Server, ownPath: OwnPath, stringsMayOutlive?: () => void): void {
  server.on('connection', (socket: Socket) => {
    if (isParserScrub(socket)) return;
    followReads(socket);
    lingerBeforeClosing(socket);
  });
  // Ahead of a listener that answers some requests at once (Fastify's, a URL it cannot decode).
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    const own = ownPath(request.url ?? '');
    const inPieces = headInPieces(request);
    if (!own || inPieces) stringsMayOutlive?.();
    if (!own || inPieces || request.headers['transfer-encoding'] !== undefined) response.shouldKeepAlive = false;
  });
}

/** The longest a connection closed after its answer stays open for the rest of its request. */
const LINGER_MS = 30_000;

/**
 * Node ends a connection whose answer said `Connection: close` (this
 * module's, or any other: a refused `Expect`, HTTP/1.0, a missing Host, a
 * 503 while draining, a 408) as soon as the answer is written
 * (`destroySoon`). A client still sending its body then gets a reset, which
 * can cost it the answer it has not read yet (a 413 in the middle of an
 * upload, a 404 before a large body). So the first such end of a
 * connection whose request is not whole ends its side once the answer is
 * out and goes on reading until the request has been read to its end (its
 * body drained, and wiped where the service drains it:
 * wipe-after-response.ts), for at most LINGER_MS. An end after that one
 * (a parse error of what comes next: llhttp refuses every read after one;
 * Node's request timeout) destroys it at once, and the server's shutdown
 * ends it as Node would (endOwingNothing). Installed once per connection: a
 * replacement per request, which lingered again at every call, added a
 * timer and two listeners per read of a client that kept sending bytes
 * that could not be parsed.
 */
function lingerBeforeClosing(socket: Socket): void {
  const destroySoon = socket.destroySoon;
  let lingering = false;
  socket.destroySoon = function (this: Socket) {
    if (lingering) return void this.destroy();
    // The request the parser is still reading, if any: Node lets go of it once its body has been read.
    const request = (this as Socket & { parser?: { incoming?: IncomingMessage | null } }).parser?.incoming;
    if (!request || request.complete) return destroySoon.call(this);
    lingering = true;
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS).unref();
    request.once('end', () => {
      clearTimeout(timer);
      destroySoon.call(this);
    });
    this.once('close', () => clearTimeout(timer));
  };
}

/**
 * Ends a connection that owes no answer (the server's shutdown) as Node
 * would, once what it is writing is written: no request of its is waiting
 * for an answer, so there is none to read the rest of first.
 */
export function endOwingNothing(socket: Socket): void {
  Socket.prototype.destroySoon.call(socket);
}
