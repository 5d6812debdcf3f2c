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

/** The key presented in `Authorization: Bearer <key>`, if the header has that form. */
export function bearerToken(header: string | undefined): string | undefined {
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
}

export function authenticate(keys: KeyStore) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const token = bearerToken(request.headers.authorization);
    const key = token === undefined ? undefined : keys.verify(token);
    if (!key) throw new HttpError(401, MESSAGES.unauthorized, { 'www-authenticate': 'Bearer' });
    request.apiKey = key;
  };
}
