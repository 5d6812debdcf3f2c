/**
 * Core dumps off for the server and its workers: a crash dump would write
 * the memory of a process, request content included, to disk.
 *
 * Node has no setrlimit, so util-linux's `prlimit` (in every Debian-based
 * image, and in the service's Docker image) lowers this process's limit;
 * workers are started afterwards and inherit it. If the limit cannot be
 * made 0, the service does not start.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The soft and hard core file size limits of `pid`, from /proc (null: unlimited). */
export function coreLimit(pid: number | 'self' = 'self'): { soft: number | null; hard: number | null } {
  const line = readFileSync(`/proc/${pid}/limits`, 'latin1')
    .split('\n')
    .find((l) => l.startsWith('Max core file size'));
  const [soft, hard] = (line ?? '').slice('Max core file size'.length).trim().split(/\s+/);
  const value = (text: string | undefined) => (text === 'unlimited' || text === undefined ? null : Number(text));
  return { soft: value(soft), hard: value(hard) };
}

export class CoreDumpError extends Error {
  override name = 'CoreDumpError';
}

export function disableCoreDumps(): void {
  if (coreLimit().soft === 0 && coreLimit().hard === 0) return;
  try {
    execFileSync('prlimit', [`--pid=${process.pid}`, '--core=0:0'], { stdio: 'ignore' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CoreDumpError(
      `core dumps could not be turned off (prlimit ${code === 'ENOENT' ? 'not found: install util-linux' : 'failed'}); start the service under \`ulimit -c 0\``,
    );
  }
  const after = coreLimit();
  if (after.soft !== 0) throw new CoreDumpError(`core dumps could not be turned off (core file size limit is ${after.soft ?? 'unlimited'})`);
}
