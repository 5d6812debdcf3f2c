/**
 * Receives a request body into a buffer the service owns.
 *
 * Node hands the body over in chunks, each its own copy of bytes read from
 * the socket; every chunk is copied into the body buffer and zero-filled at
 * once, so the body buffer is the only copy, and whoever holds it wipes it
 * when done (releaseBody: large bodies are in reused buffers, body-pool.ts). With a Content-Length the buffer is allocated once at that
 * size; a chunked body grows it (the old one wiped) and is refused as soon
 * as it passes the limit, without keeping what came.
 */
import type { Readable } from 'node:stream';
import { bodyBuffer, copyIntoBody, releaseBody } from './body-pool.js';

export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
}

/** The client left, or sent fewer bytes than its Content-Length. */
export class BodyIncompleteError extends Error {
  override name = 'BodyIncompleteError';
}

const FIRST_CHUNKED_BYTES = 64 * 1024;

/** Zero-fills every chunk still to come: for bodies that are answered without being read. */
export function discardBody(stream: Readable): void {
  stream.on('data', (chunk: Buffer) => chunk.fill(0));
  stream.resume();
}

export function receiveBody(stream: Readable, declaredLength: number | undefined, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let body = bodyBuffer(declaredLength === undefined ? Math.min(FIRST_CHUNKED_BYTES, limit) : declaredLength);
    let received = 0;
    let settled = false;

    const stop = (error: Error) => {
      if (settled) return;
      settled = true;
      detach();
      releaseBody(body);
      discardBody(stream);
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > body.length) {
        if (declaredLength !== undefined || received + chunk.length > limit) {
          chunk.fill(0);
          return stop(declaredLength === undefined ? new BodyTooLargeError() : new BodyIncompleteError());
        }
        const grown = bodyBuffer(Math.min(limit, Math.max(body.length * 2, received + chunk.length)));
        body.copy(grown, 0, 0, received);
        releaseBody(body);
        body = grown;
      }
      copyIntoBody(chunk, body, received);
      received += chunk.length;
      chunk.fill(0);
    };
    const onEnd = () => {
      if (settled) return;
      if (declaredLength !== undefined && received !== declaredLength) return stop(new BodyIncompleteError());
      settled = true;
      detach();
      resolve(received === body.length ? body : body.subarray(0, received));
    };
    const onClose = () => stop(new BodyIncompleteError());
    const detach = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onClose);
      stream.off('close', onClose);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onClose);
    stream.on('close', onClose);
  });
}
