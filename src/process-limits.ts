/**
 * Limits of the server process, which its workers inherit: set once at
 * start, before any worker is forked. Node has no setrlimit, so util-linux's
 * `prlimit` (in every Debian-based image, the service's Docker image too)
 * sets them on this process.
 *
 * - Core dumps off: a crash dump would write the memory of a process,
 *   request content included, to disk. If this cannot be made 0, the
 *   service does not start.
 * - A 64 MiB stack: deeply nested templates (10,000 parentheses, a box or
 *   emph 100,000 deep, a 5,000-deep fraction) overflow the default 8 MiB
 *   stack and crash the worker. With 64 MiB, nesting built at run time
 *   reaches Typst's own depth limits (an ordinary error), and nesting in
 *   the template's syntax compiles up to a depth (in code 44,000 to 78,000
 *   levels, measured: docs/engine-crashes.md) and crashes past it.
 *   The stack is reserved address space, touched only as deep as a compile goes.
 *   The engines' own threads get as much (render/sandbox.ts: RUST_MIN_STACK).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { WORKER_STACK_BYTES } from './render/sandbox.js';

type Limit = { soft: number | null; hard: number | null };

/** A limit of `pid` as /proc shows it (null: unlimited). */
export function processLimit(pid: number | 'self', name: 'Max core file size' | 'Max stack size'): Limit {
  const line = readFileSync(`/proc/${pid}/limits`, 'latin1')
    .split('\n')
    .find((l) => l.startsWith(name));
  const [soft, hard] = (line ?? '').slice(name.length).trim().split(/\s+/);
  const value = (text: string | undefined) => (text === 'unlimited' || text === undefined ? null : Number(text));
  return { soft: value(soft), hard: value(hard) };
}

export class ProcessLimitError extends Error {
  override name = 'ProcessLimitError';
}

export function setProcessLimits(): void {
  const core = processLimit('self', 'Max core file size');
  const stack = processLimit('self', 'Max stack size');
  const wantedStack = stack.hard === null ? WORKER_STACK_BYTES : Math.min(WORKER_STACK_BYTES, stack.hard);
  const args = [`--pid=${process.pid}`];
  if (core.soft !== 0 || core.hard !== 0) args.push('--core=0:0');
  if (stack.soft !== null && stack.soft < wantedStack) args.push(`--stack=${wantedStack}:`);
  if (args.length === 1) return;
  try {
    execFileSync('prlimit', args, { stdio: 'ignore' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ProcessLimitError(
      `core dumps could not be turned off (prlimit ${code === 'ENOENT' ? 'not found: install util-linux' : 'failed'}); start the service under \`ulimit -c 0\``,
    );
  }
  const after = processLimit('self', 'Max core file size');
  if (after.soft !== 0)
    throw new ProcessLimitError(`core dumps could not be turned off (core file size limit is ${after.soft ?? 'unlimited'})`);
}
