/**
 * Large request bodies are received into a few buffers of MAX_BODY_BYTES
 * that are kept and reused, instead of a fresh buffer each time: a fresh
 * 9 MB buffer costs its page faults, and every such buffer counts as
 * external memory that makes V8 collect garbage (a full collection of the
 * whole heap) every few large requests.
 *
 * A pool buffer is an ArrayBuffer like any other: it is moved to the
 * checking thread and back (check-thread.ts), and comes back as a new
 * ArrayBuffer object over the same memory, which takes the old one's place
 * here (poolBufferMoved). A body in a pool buffer is the only copy, as with
 * any owned buffer; releasing it zero-fills the bytes it used before the
 * buffer goes back to the pool, so a pool buffer at rest holds zeros. When
 * every pool buffer is in use, a body gets a buffer of its own
 * (ownedBuffer), as before. (Not SharedArrayBuffers: V8 fills and copies
 * shared memory a byte at a time, several times slower.)
 */
import { MAX_BODY_BYTES } from '../config.js';
import { ownedBuffer } from './owned-buffer.js';

/** Bodies up to this size get a buffer of their own: cheap, and they make little garbage. */
const POOL_MIN_BYTES = 256 * 1024;
/** At most this many pool buffers (each MAX_BODY_BYTES, resident once used): enough for the large bodies in flight at once. */
const POOL_SIZE = 4;

const buffers: ArrayBuffer[] = [];
const free: number[] = [];
/** Which pool buffer a body's memory is, by its ArrayBuffer object. */
const slotOf = new WeakMap<ArrayBuffer, number>();

/** A buffer for a body of `size` bytes: a pool buffer's first `size` bytes, or a buffer of its own. */
export function bodyBuffer(size: number): Buffer {
  if (size <= POOL_MIN_BYTES || size > MAX_BODY_BYTES) return ownedBuffer(size);
  let slot = free.pop();
  if (slot === undefined) {
    if (buffers.length >= POOL_SIZE) return ownedBuffer(size);
    slot = buffers.length;
    const buffer = new ArrayBuffer(MAX_BODY_BYTES);
    buffers.push(buffer);
    slotOf.set(buffer, slot);
  }
  return Buffer.from(buffers[slot]!, 0, size);
}

/** The pool buffer `body` is in, or undefined for a buffer of its own. */
export function poolSlot(body: Buffer): number | undefined {
  return body.buffer instanceof ArrayBuffer ? slotOf.get(body.buffer) : undefined;
}

/** Pool buffer `slot` came back from the checking thread as `buffer`. */
export function poolBufferMoved(slot: number, buffer: ArrayBuffer): void {
  buffers[slot] = buffer;
  slotOf.set(buffer, slot);
}

/**
 * Zero-fills `body`, and gives its pool buffer back if it is in one. Each
 * body is released once its last user is done: the response and its job
 * (generate.ts), or the receiver for a body it refuses.
 */
export function releaseBody(body: Buffer): void {
  body.fill(0);
  const slot = poolSlot(body);
  if (slot !== undefined && buffers[slot] === body.buffer && !free.includes(slot)) free.push(slot);
}
