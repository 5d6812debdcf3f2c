/**
 * glibc's malloc fills every block it frees with a byte of ours, so that
 * native memory freed without being cleared (Node's read buffers, the
 * compiler's sources and layout) holds no request content. Blocks kept in
 * malloc's per-thread cache skip that fill, so the cache is off. Tunables
 * are read when a process starts: workers get them in their environment
 * (render/sandbox.ts), and the server starts itself again with them
 * (ensureFreedMemoryFill).
 */

/** The byte freed memory is filled with (any non-zero byte; 0xA5 is easy to spot in a dump). */
const FREED_MEMORY_FILL = 0xa5;

export const FREED_MEMORY_TUNABLES = `glibc.malloc.perturb=${FREED_MEMORY_FILL}:glibc.malloc.tcache_count=0`;

/**
 * Replaces this process with itself started with the tunables, unless it
 * already has them: same process id, arguments and environment. Where
 * `process.execve` is missing (not Linux), it goes on without them.
 */
export function ensureFreedMemoryFill(): void {
  const tunables = process.env.GLIBC_TUNABLES ?? '';
  if (tunables.includes(FREED_MEMORY_TUNABLES) || typeof process.execve !== 'function' || process.platform !== 'linux') return;
  const env = { ...process.env, GLIBC_TUNABLES: tunables ? `${tunables}:${FREED_MEMORY_TUNABLES}` : FREED_MEMORY_TUNABLES };
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}
