/**
 * Native memory freed without being cleared (Node's read buffers, the
 * compiler's sources, layout and PDF) must hold no request content: the
 * allocator fills every block as it is freed. Two ways, chosen once per
 * process at start:
 *
 * - jemalloc (`libjemalloc2`), preloaded after native/free-fill.c, which
 *   fills each block as it is given back (free, operator delete, a realloc
 *   that moves it) and leaves jemalloc on its fast path: a few per cent of
 *   a compile, 13% on a 50-page one. (jemalloc's own `junk:free` takes
 *   every malloc and free down its slow path: 20% there.)
 * - glibc's malloc with `perturb`, which fills on allocation and on free,
 *   and with its per-thread cache off (blocks kept there skip the fill):
 *   10% to 150% of a compile, the more the larger the document.
 *
 * jemalloc where both files are there (the image and CI install it and build
 * free-fill.so), glibc otherwise. The settings are read when a process
 * starts: workers get them in their environment (render/sandbox.ts), and the
 * server starts itself again with them (start-settings.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The byte glibc fills freed memory with (any non-zero byte; 0xA5 is easy to spot in a dump). free-fill.c's is 0x5A. */
const FREED_MEMORY_FILL = 0xa5;

const GLIBC_TUNABLES = `glibc.malloc.perturb=${FREED_MEMORY_FILL}:glibc.malloc.tcache_count=0`;

/** Where Debian's `libjemalloc2` puts the library, by architecture. */
const JEMALLOC_PATHS = ['/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'];
/** Built by `npm run build` (scripts/build-free-fill.mjs); this file is dist/src/retention/freed-memory-fill.js. */
const FREE_FILL = fileURLToPath(new URL('../../native/free-fill.so', import.meta.url));

export interface FreedMemoryFill {
  allocator: 'jemalloc' | 'glibc';
  /** The environment variables that make a process start with it. */
  env: Record<string, string>;
  /** One line for the start log. */
  description: string;
}

let chosen: FreedMemoryFill | undefined;

export function freedMemoryFill(): FreedMemoryFill {
  chosen ??= choose();
  return chosen;
}

function choose(): FreedMemoryFill {
  const jemalloc = JEMALLOC_PATHS.find((path) => existsSync(path));
  if (jemalloc && existsSync(FREE_FILL)) {
    return {
      allocator: 'jemalloc',
      env: { LD_PRELOAD: `${FREE_FILL}:${jemalloc}` },
      description: 'freed memory is filled by native/free-fill.c, on jemalloc, as each block is freed',
    };
  }
  const missing = jemalloc ? `${FREE_FILL} is not built (needs a C compiler at npm run build)` : 'libjemalloc2 is not installed';
  return {
    allocator: 'glibc',
    env: { GLIBC_TUNABLES },
    description: `freed memory is filled by glibc's malloc (perturb, per-thread cache off), which costs large documents much more: ${missing}`,
  };
}

/** Whether this process was started with the fill (its environment holds every variable of it). */
export function startedWithFill(env: NodeJS.ProcessEnv): boolean {
  return Object.entries(freedMemoryFill().env).every(([name, value]) => (env[name] ?? '').includes(value));
}
