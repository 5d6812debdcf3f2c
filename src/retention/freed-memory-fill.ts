/**
 * Native memory freed without being cleared (Node's read buffers, the
 * compiler's sources, layout and PDF) must hold no request content: the
 * allocator's blocks are filled as they are freed. Two ways, chosen once
 * per process at start:
 *
 * - native/free-fill.c, preloaded in front of glibc's malloc, fills each
 *   block as it is given back (free, a realloc that moves it) and leaves
 *   glibc's malloc as fast as it is: 2% to 4% of a compile on either
 *   engine. (jemalloc with the same fill cost Typst 0.11 10% to 13%, most
 *   of it jemalloc's own handing back and refaulting of pages.)
 * - where it was not built (no C compiler at `npm run build`), glibc's own
 *   `perturb`, which fills on allocation too, with its per-thread cache off
 *   (blocks kept there skip the fill): 10% to 150% of a compile, the more
 *   the larger the document.
 *
 * The settings are read when a process starts: workers get them in their
 * environment (render/sandbox.ts), and the server starts itself again with
 * them (start-settings.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The byte glibc fills freed memory with (any non-zero byte; 0xA5 is easy to spot in a dump). free-fill.c's is 0x5A. */
const FREED_MEMORY_FILL = 0xa5;

const GLIBC_TUNABLES = `glibc.malloc.perturb=${FREED_MEMORY_FILL}:glibc.malloc.tcache_count=0`;

/**
 * With free-fill.so, glibc's fast bins are off: a worker that had compiled
 * a 53-page report was then 7% to 8% slower at 9 MB of data with them (two
 * workers at c=4: 95 to 97 against 102 to 103 ms a document), and the
 * engine alone is no slower without them (one-page and 53-page documents,
 * floor processes side by side). The per-thread cache stays on.
 */
const FREE_FILL_TUNABLES = 'glibc.malloc.mxfast=0';

/** Built by `npm run build` (scripts/build-free-fill.mjs); this file is dist/src/retention/freed-memory-fill.js. */
const FREE_FILL = fileURLToPath(new URL('../../native/free-fill.so', import.meta.url));

export interface FreedMemoryFill {
  /** `free-fill`: native/free-fill.c in front of glibc's malloc; `perturb`: glibc's malloc alone. */
  method: 'free-fill' | 'perturb';
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
  if (existsSync(FREE_FILL)) {
    return {
      method: 'free-fill',
      env: { LD_PRELOAD: FREE_FILL, GLIBC_TUNABLES: FREE_FILL_TUNABLES },
      description: "freed memory is filled by native/free-fill.c, in front of glibc's malloc, as each block is freed",
    };
  }
  return {
    method: 'perturb',
    env: { GLIBC_TUNABLES },
    description: `freed memory is filled by glibc's malloc (perturb, per-thread cache off), which costs large documents much more: ${FREE_FILL} is not built (needs a C compiler at npm run build)`,
  };
}

/** Whether this process was started with the fill (its environment holds every variable of it). */
export function startedWithFill(env: NodeJS.ProcessEnv): boolean {
  return Object.entries(freedMemoryFill().env).every(([name, value]) => (env[name] ?? '').includes(value));
}
