/**
 * Authentication: `Authorization: Bearer <key>` checked against the key
 * store before anything else of a request under /v1 (identify), and a
 * request without a valid key answered 401 before its body is read.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKey, KeyStore } from './keys.js';
import { MESSAGES } from '../messages.js';
import { HttpError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key the request presented, checked once (see identify); null without a valid one. */
    apiKey: ApiKey | null;
  }
}

const BEARER = /^Bearer +([\x21-\x7e]{1,512}) *$/i;

/** The key presented in `Authorization: Bearer <key>`, if the header has that form. */
function bearerToken(header: string | undefined): string | undefined {
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
}

/**
 * Reads and checks the request's key, once: the rate limit counts the
 * request under it (or under the client's address without one), the auth
 * hook refuses a request without one, and logs and metrics name it.
 */
export function identify(request: FastifyRequest, keys: KeyStore): ApiKey | null {
  const token = bearerToken(request.headers.authorization);
  request.apiKey = (token === undefined ? undefined : keys.verify(token)) ?? null;
  return request.apiKey;
}

/** onRequest of the protected routes: 401 unless identify found a valid key. */
export async function authenticate(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (!request.apiKey) throw new HttpError(401, MESSAGES.unauthorized, { 'www-authenticate': 'Bearer' });
}
