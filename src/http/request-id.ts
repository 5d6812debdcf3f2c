/**
 * A request's id. A client may send one (`X-Request-Id`), which its answer
 * echoes; the log carries its SHA-256 instead (`sha256:` and the first 32
 * hex digits), so that nothing a request sent reaches a log line, nor stays
 * in the server's memory in one waiting to be written, and an operator
 * still finds a client's request by the digest of its id. A request that
 * sends none, or one that is not 1 to 128 of `A-Za-z0-9_.:-`, gets a new
 * UUID, logged and answered as it is.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The id the client sent, if it is one the service takes. */
export function sentRequestId(headers: IncomingHttpHeaders): string | undefined {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : undefined;
}

/** The id the log carries: the digest of the one sent, or a new UUID. */
export function loggedRequestId(headers: IncomingHttpHeaders): string {
  const sent = sentRequestId(headers);
  return sent === undefined ? randomUUID() : `sha256:${createHash('sha256').update(sent).digest('hex').slice(0, 32)}`;
}
