/**
 * Large request bodies are received into a few buffers of MAX_BODY_BYTES
 * that are kept and reused, instead of a fresh buffer each time: a fresh
 * 9 MB buffer costs its page faults, and every such buffer counts as
 * external memory that makes V8 collect garbage (a full collection of the
 * whole heap) every few large requests.
 *
 * Pool buffers are SharedArrayBuffers, so that the checking thread reads a
 * body where it is (request/check-thread.ts) instead of the buffer being moved
 * there and back: each move made a new ArrayBuffer object of 10 MiB on
 * both sides, which V8 counts as new external memory, and that alone
 * brought a full collection per large request in each thread.
 *
 * A body in a pool buffer is the only copy, as with any owned buffer;
 * releasing it zero-fills the bytes it used (wipe.ts) before the buffer
 * goes back to the pool, so a pool buffer at rest holds zeros. When every
 * pool buffer is in use, a body gets a buffer of its own (ownedBuffer), as
 * before.
 */
import { MAX_BODY_BYTES } from '../api-values.js';
import { ownedBuffer } from './owned-buffer.js';
import { wipe } from './wipe.js';

/** Bodies up to this size get a buffer of their own: cheap, and they make little garbage. */
const POOL_MIN_BYTES = 256 * 1024;
/** At most this many pool buffers (each MAX_BODY_BYTES, resident once used): enough for the large bodies in flight at once. */
const POOL_SIZE = 4;

/** Shared memory is copied a word at a time only between places aligned alike (copyIntoBody). */
const WORD = 8;
/** Ordinary memory a chunk passes through on its way into shared memory; zero-filled after each use. */
const STAGING_BYTES = 64 * 1024;
let staging: Buffer | undefined;

const buffers: SharedArrayBuffer[] = [];
const free: number[] = [];

/** A buffer for a body of `size` bytes: the first `size` bytes of a pool buffer, or a buffer of its own. */
export function bodyBuffer(size: number): Buffer {
  if (size <= POOL_MIN_BYTES || size > MAX_BODY_BYTES) return ownedBuffer(size);
  let slot = free.pop();
  if (slot === undefined) {
    if (buffers.length >= POOL_SIZE) return ownedBuffer(size);
    slot = buffers.length;
    buffers.push(new SharedArrayBuffer(MAX_BODY_BYTES));
  }
  return Buffer.from(buffers[slot]!, 0, size);
}

/**
 * `chunk.copy(body, at)`. V8 copies into shared memory (a pool buffer) a
 * word at a time only when source and target are aligned alike, and a
 * byte at a time otherwise: about 5 ms for 9 MB instead of 1.4, and Node's
 * chunks land wherever the one before ended. So a chunk that would not line
 * up goes through an ordinary buffer, placed so that it does.
 */
export function copyIntoBody(chunk: Buffer, body: Buffer, at: number): void {
  if (!(body.buffer instanceof SharedArrayBuffer) || (chunk.byteOffset - (body.byteOffset + at)) % WORD === 0) {
    chunk.copy(body, at);
    return;
  }
  staging ??= ownedBuffer(STAGING_BYTES + WORD);
  const lead = (body.byteOffset + at) % WORD;
  for (let from = 0; from < chunk.length; from += STAGING_BYTES) {
    const to = Math.min(chunk.length, from + STAGING_BYTES);
    // Starting `lead` bytes into the staging buffer, it is aligned as the target is.
    chunk.copy(staging, lead, from, to);
    staging.copy(body, at + from, lead, lead + (to - from));
    wipe(staging.subarray(lead, lead + (to - from)));
  }
}

/** The pool buffer `body` is in, or undefined for a buffer of its own. */
export function poolSlot(body: Buffer): number | undefined {
  const slot = buffers.indexOf(body.buffer as SharedArrayBuffer);
  return slot < 0 ? undefined : slot;
}

/** Pool buffer `slot`'s memory, for the checking thread. */
export function poolBuffer(slot: number): SharedArrayBuffer {
  return buffers[slot]!;
}

/**
 * Zero-fills `body`, and gives its pool buffer back if it is in one. Each
 * body is released once its last user is done: the response and its job
 * (http/generate.ts), or the receiver for a body it refuses.
 */
export function releaseBody(body: Buffer): void {
  wipe(body);
  giveBack(body);
}

/** Gives `body`'s pool buffer back, once nothing reads from it any more; the body must be wiped already. */
export function giveBack(body: Buffer): void {
  const slot = poolSlot(body);
  if (slot !== undefined && !free.includes(slot)) free.push(slot);
}
