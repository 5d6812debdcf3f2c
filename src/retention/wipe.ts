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

function wipeShared(bytes: Uint8Array): void {
  const start = bytes.byteOffset;
  const end = start + bytes.length;
  const wordsStart = Math.min(end, (start + 7) & ~7);
  const wordsEnd = Math.max(wordsStart, end & ~7);
  bytes.fill(0, 0, wordsStart - start);
  new Float64Array(bytes.buffer, wordsStart, (wordsEnd - wordsStart) / 8).fill(0);
  bytes.fill(0, wordsEnd - start);
}
