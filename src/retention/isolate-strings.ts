/**
 * Clears a V8 isolate of the strings a job made of its request: the
 * worker's main isolate (render/worker.ts) and its business rules' thread
 * (finish/rules-thread.ts). Both run with the worker's flags
 * (render/pool.ts), which V8 applies to every isolate of the process.
 */
import { type Collect, MEMORY_REDUCING_COLLECTION } from './old-generation-clearing.js';

/** V8's collector, as `--expose-gc` gives it (in every isolate of the worker: see render/pool.ts). */
export const collect = (globalThis as { gc?: Collect }).gc;

/**
 * The young generation's dead strings: a collection of it, with V8 clearing
 * what it frees (`--clear-free-memory`, see render/pool.ts), zero-fills
 * them (0.2 to 0.3 ms of a 2-core VM); a collection of the whole heap frees
 * them but leaves them where they were. V8 keeps the subject of the last
 * regular expression match alive (`RegExp.lastMatch`), so a match on a
 * constant string lets it go first.
 */
export function forgetYoungStrings(): void {
  /x/.exec('x');
  collect?.({ type: 'minor' });
}

/**
 * Strings that may have reached the old generation too: the young
 * generation first, then a last-resort collection of the whole heap, one
 * that reduces memory: V8 gives back the pages it empties and, with the
 * worker's flags, clears what it frees in the old generation. Its cost
 * grows with the isolate's heap (old-generation-clearing.ts).
 */
export function forgetAllStrings(): void {
  forgetYoungStrings();
  collect?.(MEMORY_REDUCING_COLLECTION);
}
