/**
 * Settings of the server process that take effect only from its start:
 *
 * - the allocator fills every block freed (freed-memory-fill.ts);
 * - V8's heap is sized for the service (V8_FLAGS).
 *
 * A server started without them replaces itself with itself started with
 * them (`process.execve`: same process id, arguments and environment),
 * before it does anything else. On Linux a Node.js without `process.execve`
 * (older than 22.15) stops the start, whatever its settings: on Node.js 20
 * the scan at the answer found an e-invoice's title in the server (started
 * without the fill) and its seller in a worker (started with it), nearly
 * every time, so such a Node.js is refused outright rather than helped.
 * Elsewhere (not Linux, a development machine) it goes on as it was started.
 */
import { freedMemoryFill, startedWithFill } from './freed-memory-fill.js';

/**
 * V8 flags of the server, each unless the operator gave it, on the command
 * line or in NODE_OPTIONS (which can carry `--max-semi-space-size`). The
 * young generation is two semi-spaces: the sizes below are each one's.
 *
 * (No flag sizes the old generation: the chunks of a large body, each a
 * buffer of its own, are freed as they are received (wipeReadChunk), so V8 no
 * longer counts them against it. With `--initial-old-space-size=64`,
 * which that once needed, 9 MB bodies cost the server the same CPU, and
 * it held 6 MiB more.)
 * - `--no-memory-reducer`. V8's memory reducer, seeing the allocation rate
 *   drop while the server waits on a compile, runs full collections and
 *   shrinks the young generation to its least (1 MiB): then a young
 *   collection came every 17 one-page requests, so nearly every request
 *   outlived one, and each quiet spell made the heap scrub collect the whole
 *   heap (heap-scrub.ts). The scrub already collects whenever the server is
 *   quiet, which is what the reducer is for. Measured at c=1 in blocks of 75
 *   one-page requests, three runs each: 1.16 to 1.22 ms of server CPU per
 *   request against 1.40 to 1.56, and 9 ms once quiet against 29 to 35.
 * - `--min-semi-space-size=8`. The heap scrub's collection of the whole
 *   heap reduces memory (heap-scrub.ts), and so shrank the young
 *   generation: the next requests lived through young collections, and
 *   most quiet spells needed the whole heap collected again. Blocks of 30
 *   requests 400 ms apart (W1, E1, W2), two runs: with each semi-space at
 *   least 8 MiB, 2.7 to 3.2 ms of CPU once quiet, without 44 to 52 ms
 *   (a full collection in most spells); the same CPU per request either
 *   way. At least 16 MiB each did no better, and held the server at 210 MiB
 *   over the bench's 3,000 W2 requests (8 MiB: 171; none: 168).
 * - `--max-semi-space-size=8`: nor larger, so the young generation stays
 *   at 16 MiB. Under load V8 grew it, and the pages it grew into stayed
 *   with the server (kept in V8's page pool once it shrank again): over
 *   1,200 six-page reports on Typst 0.14 at c=4 the server went from 124
 *   MiB to 155 in one run and to 201 in another, by 600 requests, and then
 *   stayed there. Held, it went to 141 and 142, flat from the 600th
 *   request, for the same CPU (server CPU per request, two services taking
 *   turns, c=1 and c=4, W1 and the 0.14 report: within 4 % either way).
 */
export const V8_FLAGS = ['--no-memory-reducer', '--min-semi-space-size=8', '--max-semi-space-size=8'];

/** A flag's name: what comes before `=`. */
const flagName = (flag: string) => flag.split('=')[0]!;

export class StartSettingsError extends Error {}

/** Restarts the server with its settings where it lacks them; throws StartSettingsError on a Linux Node.js that cannot. */
export function ensureStartSettings(): void {
  if (process.platform !== 'linux') return;
  if (typeof process.execve !== 'function')
    throw new StartSettingsError(
      `Node.js ${process.versions.node} cannot restart the server with freed memory filled (process.execve, from Node.js 22.15): zero retention would not hold. Use Node.js 22.15 or later, or 24.`,
    );
  const hasFill = startedWithFill(process.env);
  const fromEnv = (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter((word) => word.startsWith('--'));
  const given = new Set([...process.execArgv, ...fromEnv].map(flagName));
  const missing = V8_FLAGS.filter((flag) => !given.has(flagName(flag)));
  if (hasFill && missing.length === 0) return;
  const env = hasFill ? process.env : withFill(process.env);
  process.execve(process.execPath, [process.execPath, ...missing, ...process.execArgv, ...process.argv.slice(1)], env);
}

/** Each list the operator set keeps its entries, after ours (free-fill.so refuses to run in front of another malloc). */
const SEPARATORS: Record<string, string> = { GLIBC_TUNABLES: ':', LD_PRELOAD: ':' };

function withFill(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const merged = { ...env };
  for (const [name, value] of Object.entries(freedMemoryFill().env)) {
    const given = env[name];
    merged[name] = given ? `${value}${SEPARATORS[name]}${given}` : value;
  }
  return merged;
}
