/**
 * Authentication: the key of `Authorization: Bearer <key>` is identified
 * once, first of all for a request under /v1 (identifyKey); the rate limit
 * counts the request under it, and the protected routes answer 401 without
 * one (requireKey), before the body is read. Every step that needs the key
 * asks requestKey(), which identifies it if no step did yet, so no step
 * depends on another having run.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKey, KeyStore } from './keys.js';
import { MESSAGES } from '../messages.js';
import { HttpError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key the request presented: undefined until identified, then the key or null without a valid one. */
    apiKey?: ApiKey | null;
  }
}

/** The API: every request under /v1 is identified and counted. */
export const API_PATH = /^\/v1(?:[/?#]|$)/;

const BEARER = /^Bearer +([\x21-\x7e]{1,512}) *$/i;

/** The key presented in `Authorization: Bearer <key>`, if the header has that form. */
function bearerToken(header: string | undefined): string | undefined {
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
}

/** The request's key, checked against the store once and kept on the request; null without a valid one. */
export function requestKey(request: FastifyRequest, keys: KeyStore): ApiKey | null {
  if (request.apiKey === undefined) {
    const token = bearerToken(request.headers.authorization);
    request.apiKey = (token === undefined ? undefined : keys.verify(token)) ?? null;
  }
  return request.apiKey;
}

/** The holder of what a request holds of the bounds on memory (request/bytes-by-key.ts): its key, or one for all requests without. */
export function holderOf(request: FastifyRequest): object {
  return request.apiKey ?? WITHOUT_KEY;
}

/** The holder of requests without a key (every route that holds memory asks for a key first). */
const WITHOUT_KEY = {};

/** onRequest, first of all: identifies the key of a request under /v1 (for the rate limit, the log and metrics). */
export function identifyKey(keys: KeyStore) {
  return async (request: FastifyRequest): Promise<void> => {
    if (API_PATH.test(request.url)) requestKey(request, keys);
  };
}

/** onRequest of the protected routes: 401 without a valid key. */
export function requireKey(keys: KeyStore) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    if (!requestKey(request, keys)) throw new HttpError(401, MESSAGES.unauthorized, { 'www-authenticate': 'Bearer' });
  };
}
