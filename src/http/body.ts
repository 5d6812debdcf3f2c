/**
 * The request bodies the API accepts: JSON, UTF-8, or a multipart form
 * (request/form-check.ts), at most 10 MB, read
 * into a buffer the service owns and checked byte by byte (bytes/json-check.ts): it
 * never becomes a JavaScript string or object here, and it is wiped once
 * the response is sent.
 *
 * The size is checked twice: from Content-Length before anything is read
 * (an onRequest hook), and while reading, for chunked bodies that have no
 * length.
 */
import type { Job } from '../bytes/layout.js';
import { MAX_BODY_BYTES } from '../api-values.js';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BodyChecker } from '../request/check-thread.js';
import { releaseBody } from '../retention/body-pool.js';
import { errorBody } from '../bytes/error-body.js';
import type { CheckOptions } from '../bytes/json-check.js';
import { BodyRefusedError, type PendingBodies } from '../request/pending-bodies.js';
import { mediaTypeParameters } from '../request/media-type.js';
import { formBoundary } from '../request/multipart.js';
import { BodyIncompleteError, BodyTimeoutError, BodyTooLargeError, firstBodyBytes, receiveBody } from '../request/receive.js';
import { bodyTimeoutMessage, MESSAGES, unsupportedEncoding, unsupportedTransferCoding } from '../messages.js';
import { UnavailableError } from '../render/errors.js';
import { HttpError } from './errors.js';
import { wipe } from '../retention/wipe.js';
import { sendContinue } from './expect.js';
import { holderOf } from './auth.js';

export interface BodyOptions extends CheckOptions {
  /** Bodies being received or checked, bounded in total and per key (MAX_PENDING_BODIES_MB). */
  bodies: PendingBodies;
  /** A body with no byte for this long is answered 408 (BODY_TIMEOUT_MS). */
  bodyTimeoutMs: number;
}

/** The answer to a body that was not received whole. */
function refusalOf(error: Error, bodyTimeoutMs: number): Error {
  if (error instanceof BodyTooLargeError) return new HttpError(413, MESSAGES.tooLarge);
  if (error instanceof BodyIncompleteError) return new HttpError(400, MESSAGES.bodyLengthMismatch);
  if (error instanceof BodyTimeoutError) return new HttpError(408, bodyTimeoutMessage(bodyTimeoutMs), { connection: 'close' });
  if (error instanceof BodyRefusedError) return new UnavailableError('bodies_pending');
  // Stopped from outside: broken framing (http/client-errors.ts) or shutdown, each with its own answer.
  return error;
}

export function registerBodyParsers(app: FastifyInstance, options: BodyOptions): void {
  const { bodies, bodyTimeoutMs, ...checkOptions } = options;
  // Large bodies are checked on a thread of their own, so the event loop is never held for long.
  const checker = new BodyChecker(checkOptions);
  app.addHook('onClose', () => checker.close());
  app.removeAllContentTypeParsers();
  const parse = (
    request: FastifyRequest,
    payload: IncomingMessage,
    done: (error: Error | null, body?: Job | Error) => void,
    boundary?: Buffer,
  ) => {
    const declaredLength = request.headers['content-length'] === undefined ? undefined : Number(request.headers['content-length']);
    const room = bodies.admit(request.raw, holderOf(request), firstBodyBytes(declaredLength, MAX_BODY_BYTES));
    if (room instanceof Error) return refuse(room);
    // Every check that can refuse the request before its body has passed: the client may send it now.
    sendContinue(request.raw);
    // A check that throws has wiped the bytes; its error goes to the error handler as any other.
    receiveBody(payload, { declaredLength, limit: MAX_BODY_BYTES, idleMs: bodyTimeoutMs, room })
      .then((received) => checker.check(received, boundary))
      // A whole body counts until it is checked: bodies queued for the checking thread hold their memory too, and a
      // client that sent them faster than they could be checked held it past the bound (found by a hostile review).
      .finally(() => {
        room.release();
        wipe(boundary);
      })
      .then(
        ({ bytes, check }) => {
          if (check.ok) return done(null, { body: bytes, layout: check.layout } satisfies Job);
          // The answer may name an asset: it is made as bytes from the body, and wiped once sent.
          const answer = errorBody(bytes, check.error);
          releaseBody(bytes);
          // Handed to the route as its body, not as a parse error: Fastify closes the connection after those,
          // and this body was read whole, so the connection stays open as after any other 400.
          done(null, new HttpError(check.error.status, '', {}, answer));
        },
        (error: Error) => refuse(error),
      );
    /**
     * A body refused for its size or for room is handed to the route as its answer, like a body the check
     * refused: Fastify closes the connection after a parse error, and a client still sending would then get
     * a reset instead of its 413 or 503. Node goes on reading the rest, each chunk wiped (request/receive.ts).
     */
    function refuse(error: Error): void {
      const refusal = refusalOf(error, bodyTimeoutMs);
      if (error instanceof BodyTooLargeError || error instanceof BodyRefusedError) done(null, refusal);
      else done(refusal, undefined);
    }
  };
  app.addContentTypeParser('application/json', (request, payload, done) => parse(request, payload, done));
  // A form is received the same way, and checked by its own parser (request/form-check.ts); its boundary was checked onRequest.
  app.addContentTypeParser('multipart/form-data', (request, payload, done) => parse(request, payload, done, takeBoundary(request)));
}

/** Each form's boundary, from its onRequest check to its parser (takeBoundary); a request's own, gone with it. */
const boundaries = new WeakMap<IncomingMessage, Buffer>();

/** The boundary requireAcceptedBody found for `request`'s form, handed over once. */
function takeBoundary(request: FastifyRequest): Buffer | undefined {
  const boundary = boundaries.get(request.raw);
  boundaries.delete(request.raw);
  return boundary;
}

/**
 * The charsets a JSON Content-Type may name: JSON between systems is UTF-8
 * (RFC 8259, 8.1), and a body sent as `charset=utf-16` or `latin1` would be
 * read as something it is not.
 */
const UTF8_NAMES = ['utf-8', 'utf8'];

/** Encodings as a client may name them, shown in the answer only if they look like one. */
const ENCODING = /^[\w.,+ -]{1,40}$/;

/**
 * onRequest, before a byte of the body is read: 415 unless the body is
 * declared JSON or a form, and uncompressed; 400 for a form without its boundary; 501 for a transfer coding other
 * than chunked; 400 for an HTTP/1.0 body without a length; 413 when Content-Length already says too much.
 */
export async function requireAcceptedBody(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const contentType = request.headers['content-type'] ?? '';
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && type !== 'multipart/form-data') throw new HttpError(415, MESSAGES.unsupportedMediaType);
  const parameters = mediaTypeParameters(contentType);
  if (parameters === null) throw new HttpError(400, MESSAGES.badContentTypeParameters);
  const charset = type === 'application/json' ? parameters.get('charset')?.toLowerCase() : undefined;
  if (charset !== undefined && !UTF8_NAMES.includes(charset)) throw new HttpError(415, MESSAGES.jsonNotUtf8);
  const boundary = type === 'multipart/form-data' ? formBoundary(parameters) : undefined;
  if (typeof boundary === 'string') throw new HttpError(400, boundary);
  // Fastify picks the body's parser by the whole header, which it keeps as the key of a cache of its own (100 of
  // them, for the process's life): a form's boundary, or any parameter a client adds, would stay there. It is
  // given the media type alone, and the boundary is kept for the parser, which wipes it once the form is checked
  // (the response too, should a later hook answer first).
  request.headers['content-type'] = type;
  if (boundary) boundaries.set(request.raw, reply.holdings.hold(boundary));
  const encoding = request.headers['content-encoding']?.trim();
  if (encoding && encoding.toLowerCase() !== 'identity') {
    throw new HttpError(415, unsupportedEncoding(ENCODING.test(encoding) ? encoding.toLowerCase() : 'unknown'));
  }
  // Node's parser takes other codings before `chunked` (`gzip, chunked`) and undoes only the chunks: the body
  // would be read still coded. A server that does not know a transfer coding answers 501 (RFC 9112, 6.1).
  const transfer = request.headers['transfer-encoding']?.trim().toLowerCase();
  if (transfer && transfer !== 'chunked') {
    throw new HttpError(501, unsupportedTransferCoding(ENCODING.test(transfer) ? transfer : 'unknown'));
  }
  if (request.raw.httpVersion === '1.0' && request.headers['content-length'] === undefined) {
    throw new HttpError(400, MESSAGES.lengthRequired, { connection: 'close' });
  }
  const length = Number(request.headers['content-length']);
  // No `Connection: close` here: Node reads and drops the unread body after the answer, while closing
  // at once would make the client's TCP stack reset the connection and many clients lose the answer.
  if (Number.isFinite(length) && length > MAX_BODY_BYTES) throw new HttpError(413, MESSAGES.tooLarge);
}
