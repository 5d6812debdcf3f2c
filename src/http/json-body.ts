/**
 * The only request body the API accepts: JSON, UTF-8, at most 10 MB.
 *
 * The size is checked twice: from Content-Length before anything is read
 * (an onRequest hook), and by Fastify while reading, for chunked bodies
 * that have no length. The raw bytes are kept on the request because the
 * worker reads `data` from them with Typst's own `json()`; they are wiped
 * once the compile has them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_BODY_BYTES } from '../config.js';
import { HttpError, MESSAGES } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request body as received (without a UTF-8 byte order mark). */
    rawBody?: Buffer;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const BOM = [0xef, 0xbb, 0xbf];

export function registerJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (request, body, done) => {
    let bytes = body as Buffer;
    if (bytes[0] === BOM[0] && bytes[1] === BOM[1] && bytes[2] === BOM[2]) bytes = bytes.subarray(3);
    if (bytes.length === 0) {
      return done(new HttpError(400, 'Request body is empty: expected a JSON object with fields "data" and "template"'), undefined);
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      return done(new HttpError(400, 'Request body is not valid UTF-8'), undefined);
    }
    try {
      const value: unknown = JSON.parse(text);
      request.rawBody = bytes;
      done(null, value);
    } catch (error) {
      done(new HttpError(400, `Request body is not valid JSON: ${(error as Error).message}`), undefined);
    }
  });
}

/** onRequest: 415 unless the body is declared JSON; 413 when Content-Length already says too much. */
export async function requireJsonWithinLimit(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new HttpError(415, MESSAGES.unsupportedMediaType);
  const length = Number(request.headers['content-length']);
  // No `Connection: close` here: Node reads and drops the unread body after the answer, while closing
  // at once would make the client's TCP stack reset the connection and many clients lose the answer.
  if (Number.isFinite(length) && length > MAX_BODY_BYTES) throw new HttpError(413, MESSAGES.tooLarge);
}
