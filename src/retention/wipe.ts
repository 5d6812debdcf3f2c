/**
 * `wipe(...bytes)`: the one place the service zero-fills memory that held
 * request content, a PDF, or a secret. Every other file calls it (or holds
 * its buffers in a `Holdings`, holdings.ts), so "where is it wiped?" has one
 * answer to search for.
 */

/**
 * Zero-fills each buffer given (undefined is skipped, for a buffer that may
 * not have been made; an array of byte values is one being collected). A view of shared memory (a pool buffer of a large
 * body, body-pool.ts) is filled a 64-bit word at a time: V8 fills shared
 * memory a byte at a time, about 10 times slower than plain memory.
 */
export function wipe(...buffers: (Uint8Array | number[] | undefined)[]): void {
  for (const bytes of buffers) {
    if (!bytes) continue;
    if (!Array.isArray(bytes) && bytes.buffer instanceof SharedArrayBuffer) wipeShared(bytes);
    else bytes.fill(0);
  }
}

/**
 * Zero-fills a chunk as a stream read it (a piece of an HTTP body as Node's
 * parser handed it over, a piece of a worker's result from its pipe), and
 * frees its memory at once. Node makes each such piece an ArrayBuffer of
 * its own (test/wipe-read-chunk.test.ts); left to the collector, V8 counts
 * every one until a collection finds it, and counts them against the old
 * generation: a 9 MB body comes as about 140 chunks, and in a bare
 * `node:http` server every 9 MB body after the third or fourth started a
 * collection of the whole heap (16 in 60 bodies, 4.7 to 5.8 ms of CPU a
 * body; with the chunks freed, 0 to 2 and 2.3 to 2.5 ms). The 270 KB
 * results of the 0.14 report set off 8 such collections in 160 requests.
 * Detaching the buffer (`transfer(0)`) frees it now.
 *
 * The caller is the chunk's only reader (the one 'data' listener of its
 * stream): a listener after it would get the chunk empty. A view of part
 * of a buffer, or of shared memory, is only zero-filled; a chunk already
 * freed is left as it is.
 */
export function wipeReadChunk(chunk: Uint8Array): void {
  const { buffer } = chunk;
  const own = buffer instanceof ArrayBuffer;
  if (own && buffer.detached) return;
  wipe(chunk);
  if (!own || chunk.byteOffset !== 0 || chunk.byteLength !== buffer.byteLength) return;
  try {
    buffer.transfer(0);
  } catch {
    // A buffer that cannot be detached (marked untransferable, say) is left to the collector: it is zero-filled already.
  }
}

function wipeShared(bytes: Uint8Array): void {
  const start = bytes.byteOffset;
  const end = start + bytes.length;
  const wordsStart = Math.min(end, (start + 7) & ~7);
  const wordsEnd = Math.max(wordsStart, end & ~7);
  bytes.fill(0, 0, wordsStart - start);
  new Float64Array(bytes.buffer, wordsStart, (wordsEnd - wordsStart) / 8).fill(0);
  bytes.fill(0, wordsEnd - start);
}
