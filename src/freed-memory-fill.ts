/**
 * glibc's malloc fills every block it frees with a byte of ours, so that
 * native memory freed without being cleared (Node's read buffers, the
 * compiler's sources and layout) holds no request content. Blocks kept in
 * malloc's per-thread cache skip that fill, so the cache is off. Tunables
 * are read when a process starts: workers get them in their environment
 * (render/sandbox.ts), and the server starts itself again with them
 * (start-settings.ts).
 */

/** The byte freed memory is filled with (any non-zero byte; 0xA5 is easy to spot in a dump). */
const FREED_MEMORY_FILL = 0xa5;

export const FREED_MEMORY_TUNABLES = `glibc.malloc.perturb=${FREED_MEMORY_FILL}:glibc.malloc.tcache_count=0`;
