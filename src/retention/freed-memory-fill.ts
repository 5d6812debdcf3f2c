/**
 * Native memory freed without being cleared (Node's read buffers, the
 * compiler's sources, layout and PDF) must hold no request content: the
 * allocator fills every block as it is freed. Two ways, chosen once per
 * process at start:
 *
 * - jemalloc (`libjemalloc2`), preloaded with `MALLOC_CONF=junk:free`, and
 *   before it our realloc() (native/realloc-fill.c: jemalloc does not fill
 *   the block a realloc moves away from). It fills on free only, and keeps
 *   its per-thread caches: a few per cent of a compile.
 * - glibc's malloc with `perturb`, which fills on allocation and on free,
 *   and with its per-thread cache off (blocks kept there skip the fill):
 *   10% to 150% of a compile, the more the larger the document.
 *
 * jemalloc where both files are there (the image and CI install it and build
 * the realloc), glibc otherwise. The settings are read when a process
 * starts: workers get them in their environment (render/sandbox.ts), and the
 * server starts itself again with them (start-settings.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The byte glibc fills freed memory with (any non-zero byte; 0xA5 is easy to spot in a dump). jemalloc's is 0x5A. */
const FREED_MEMORY_FILL = 0xa5;

const GLIBC_TUNABLES = `glibc.malloc.perturb=${FREED_MEMORY_FILL}:glibc.malloc.tcache_count=0`;

/** Where Debian's `libjemalloc2` puts the library, by architecture. */
const JEMALLOC_PATHS = ['/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'];
/** Built by `npm run build` (scripts/build-realloc-fill.mjs); this file is dist/src/retention/freed-memory-fill.js. */
const REALLOC_FILL = fileURLToPath(new URL('../../native/realloc-fill.so', import.meta.url));

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
  if (jemalloc && existsSync(REALLOC_FILL)) {
    return {
      allocator: 'jemalloc',
      env: { LD_PRELOAD: `${REALLOC_FILL}:${jemalloc}`, MALLOC_CONF: 'junk:free' },
      description: 'freed memory is filled by jemalloc (junk:free)',
    };
  }
  const missing = jemalloc ? `${REALLOC_FILL} is not built (needs a C compiler at npm run build)` : 'libjemalloc2 is not installed';
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
