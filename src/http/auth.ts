/**
 * Authentication: `Authorization: Bearer <key>` checked against the key
 * store in an onRequest hook, so a request without a valid key is answered
 * 401 before its body is read.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKey, KeyStore } from './keys.js';
import { HttpError, MESSAGES } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key (its name and limit), set by the auth hook. */
    apiKey?: ApiKey;
  }
}

const BEARER = /^Bearer +([\x21-\x7e]{1,512}) *$/i;

export function authenticate(keys: KeyStore) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization;
    const token = typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
    const key = token === undefined ? undefined : keys.verify(token);
    if (!key) throw new HttpError(401, MESSAGES.unauthorized, { 'www-authenticate': 'Bearer' });
    request.apiKey = key;
  };
}
