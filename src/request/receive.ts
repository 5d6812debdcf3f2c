/**
 * Receives a request body into a buffer the service owns.
 *
 * Node hands the body over in chunks, each its own copy of bytes read from
 * the socket; every chunk is copied into the body buffer, zero-filled and
 * freed at once (wipeReadChunk: this listener is the chunk's only reader),
 * so the body buffer is the only copy, and whoever holds it wipes it when
 * done (releaseBody: large bodies are in reused buffers,
 * retention/body-pool.ts).
 * With a Content-Length the buffer is allocated once at that size; a
 * chunked body grows it (the old one wiped) and is refused as soon as it
 * passes the limit, without keeping what came.
 *
 * Every body ends: whole, or refused with what came wiped at once. It is
 * refused when it passes the limit, when the client leaves or sends fewer
 * bytes than it declared, when no byte comes for `idleMs`, when the room
 * for bodies being received runs out (pending-bodies.ts), or when it is
 * stopped from outside (broken framing, shutdown).
 */
import type { Readable } from 'node:stream';
import { bodyBuffer, copyIntoBody, releaseBody } from '../retention/body-pool.js';
import { discardBody } from '../retention/wipe-after-response.js';
import { BodyRefusedError, type Room } from './pending-bodies.js';
import { wipeReadChunk } from '../retention/wipe.js';

export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
}

/** The client left, or sent fewer bytes than its Content-Length. */
export class BodyIncompleteError extends Error {
  override name = 'BodyIncompleteError';
}

/** No byte of the body came for the idle time allowed. */
export class BodyTimeoutError extends Error {
  override name = 'BodyTimeoutError';
}

const FIRST_CHUNKED_BYTES = 64 * 1024;

/** The buffer a body starts in: its declared length, or a first slice of the limit for a chunked one. */
export function firstBodyBytes(declaredLength: number | undefined, limit: number): number {
  return declaredLength ?? Math.min(FIRST_CHUNKED_BYTES, limit);
}

export interface ReceiveOptions {
  /** Content-Length, or undefined for a chunked body. */
  declaredLength: number | undefined;
  limit: number;
  /** A body with no byte for this long is refused (BodyTimeoutError). */
  idleMs: number;
  /**
   * This body's count among those being received, admitted for firstBodyBytes(): released here when the body is
   * refused; a whole body's stays counted until its receiver's caller releases it (once the body is checked).
   */
  room: Room;
}

export function receiveBody(stream: Readable, { declaredLength, limit, idleMs, room }: ReceiveOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let body = bodyBuffer(firstBodyBytes(declaredLength, limit));
    let received = 0;
    let settled = false;

    const stop = (error: Error) => {
      if (settled) return;
      settled = true;
      detach();
      releaseBody(body);
      room.release();
      discardBody(stream);
      reject(error);
    };
    const idle = setTimeout(() => stop(new BodyTimeoutError()), idleMs);
    const onData = (chunk: Buffer) => {
      idle.refresh();
      if (received + chunk.length > body.length) {
        if (declaredLength !== undefined || received + chunk.length > limit) {
          wipeReadChunk(chunk);
          return stop(declaredLength === undefined ? new BodyTooLargeError() : new BodyIncompleteError());
        }
        const size = Math.min(limit, Math.max(body.length * 2, received + chunk.length));
        if (!room.grow(size - body.length)) {
          wipeReadChunk(chunk);
          return stop(new BodyRefusedError());
        }
        const grown = bodyBuffer(size);
        body.copy(grown, 0, 0, received);
        releaseBody(body);
        body = grown;
      }
      copyIntoBody(chunk, body, received);
      received += chunk.length;
      wipeReadChunk(chunk);
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
      clearTimeout(idle);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onClose);
      stream.off('close', onClose);
    };
    room.onStop(stop);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onClose);
    stream.on('close', onClose);
  });
}
