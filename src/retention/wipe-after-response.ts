/**
 * Zero data retention in the server's memory: buffers that held request or
 * PDF bytes are zero-filled once the response is done with them, and the
 * buffers Node reads sockets into are replaced by zeros after the answer.
 *
 * `reply.holdings` is the response's `Holdings` (holdings.ts): a buffer
 * handed to it with `reply.holdings.hold(buffer)` is wiped when the response
 * has been handed to the kernel ('finish') or the answer is over (answer-end.ts),
 * whichever comes first; a buffer held after that (or after the
 * client left) is wiped at once.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { onAnswerEnd } from './answer-end.js';
import { forgetHead, HeapScrub } from './heap-scrub.js';
import { closeConnectionsThatKeepHeads, type OwnPath } from './kept-alive-heads.js';
import { Holdings } from './holdings.js';
import { wipeReadChunk } from './wipe.js';
import { isParserScrub, scrubParserBufferOf, scrubReadBuffers } from './read-buffer-scrub.js';
import { scrubAfterAnswer, setScrubs } from './scrub-timer.js';

declare module 'fastify' {
  interface FastifyReply {
    /** What this response holds: wiped once it is sent or abandoned. */
    readonly holdings: Holdings;
  }
}

/** Each response's holdings, made on the first hand-over. */
const byResponse = new WeakMap<ServerResponse, Holdings>();

function holdingsOf(response: ServerResponse): Holdings {
  let holdings = byResponse.get(response);
  if (!holdings) {
    const made = new Holdings();
    byResponse.set(response, made);
    const wipeHeld = () => made.wipe();
    response.once('finish', wipeHeld);
    onAnswerEnd(response, wipeHeld);
    holdings = made;
  }
  // A response already sent has no 'finish' to come (one abandoned, no end: onAnswerEnd ran at once).
  if (response.writableFinished) holdings.wipe();
  return holdings;
}

/**
 * Zero-fills and frees every chunk still to come, as the stream's only
 * reader: for bodies that are answered without being read, or refused
 * part-way (request/receive.ts). Such a body may come after its answer,
 * whose scrub has run, on a connection the client keeps open: each chunk
 * asks for the read buffers' scrub again, since Node's parser buffer holds
 * the last one read.
 */
export function discardBody(stream: Readable): void {
  stream.on('data', wipeDiscardedChunk);
  stream.resume();
}

function wipeDiscardedChunk(chunk: Buffer): void {
  wipeReadChunk(chunk);
  scrubAfterAnswer();
}

export function registerWipe(app: FastifyInstance): void {
  app.decorateReply('holdings', {
    getter(this: FastifyReply) {
      return holdingsOf(this.raw);
    },
  });

  // A body the service answers without reading (401, 404, 413, 415, 429 ...) is still drained
  // by Node after the answer; its chunks are wiped as they pass.
  app.addHook('onSend', async (request) => {
    if (!request.raw.readableEnded && request.raw.listenerCount('data') === 0) discardBody(request.raw);
  });
}

/** The process's one heap's scrub, made with the scrubs by the first server that follows its requests. */
let heap: HeapScrub | undefined;

/**
 * Makes an HTTP server of the service's keep nothing of its requests past
 * their answers; every server of the process goes through it (the API's,
 * and the metrics' own port).
 *
 * Node's HTTP server reads each connection into a buffer of its parser's and
 * copies the body out of it (wiped as received: request/receive.ts). That
 * buffer, one for every server of the process, and the one of the last
 * stream read in JavaScript, are replaced by zeros after every answer and
 * every closed connection, whatever the outcome (read-buffer-scrub.ts, when
 * scrub-timer.ts says). No listener reads the sockets themselves: one would
 * make Node hand every read to JavaScript as a new buffer, about 9 MB of
 * garbage per large body besides the body's own chunks, and a full garbage
 * collection for each.
 *
 * The strings the parser made of the request's head (its key among them)
 * are collected shortly after the answer, in memory V8 then clears
 * (heap-scrub.ts), and the parser's own copies of a URL that is none of
 * `ownPath`'s, or of a head that came in pieces, go with their connection
 * (kept-alive-heads.ts).
 */
export function wipeSocketReads(server: Server, ownPath: OwnPath): void {
  if (!heap) {
    const scrub = new HeapScrub();
    heap = scrub;
    setScrubs({
      laterInFlight: () => scrub.laterInFlight(),
      quiet: () => {
        // The scrub's writes go out before the collection holds the event loop (a full one takes 20 to 70 ms).
        scrubReadBuffers();
        void scrub.collect();
      },
      overdue: scrubReadBuffers,
    });
  }
  const scrub = heap;
  scrubParserBufferOf(server);
  server.on('connection', (socket: Socket) => {
    if (!isParserScrub(socket)) socket.on('close', scrubAfterAnswer);
  });
  server.on('request', (request: IncomingMessage, response) => {
    const started = scrub.requestStarts(request.rawHeaders);
    onAnswerEnd(response, () => {
      // After the onResponse hooks, which read the head (the log line, the metrics) a few turns later.
      setImmediate(forgetHead, request);
      // The request no longer counts as in flight before the scrubs are asked for.
      scrub.answered(started);
      scrubAfterAnswer();
    });
  });
  closeConnectionsThatKeepHeads(server, ownPath, () => scrub.stringsMayOutliveCollections());
  // A head Node could not take as a request (not the read buffers' scrub's zeros): it may have made strings of part of
  // it, for no request to count.
  server.on('clientError', (_error: Error, socket: Socket) => {
    if (!isParserScrub(socket)) scrub.stringsMayOutliveCollections();
  });
}
