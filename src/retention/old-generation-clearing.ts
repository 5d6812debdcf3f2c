/**
 * What makes V8 clear the memory it frees in the old generation, in the
 * server (heap-scrub.ts) and in the workers (render/pool.ts, worker.ts).
 * V8 zero-fills the young generation after each collection of it
 * (`--clear-free-memory`), but in the old generation, where a string goes
 * once it has lived through two young collections, that flag clears
 * nothing: a collection of the whole heap frees the string and leaves its
 * bytes where they were. A memory-reducing collection (`flavor:
 * 'last-resort'`) gives back the whole OS pages it empties, and clears the
 * rest of what it frees only with the flag below. Measured, and what each
 * costs: docs/retention.md.
 */

/** V8's collector, as `--expose-gc` gives it. */
export type Collect = (options: { type: 'minor' } | { type: 'major' } | typeof MEMORY_REDUCING_COLLECTION) => void;

/** A collection of the whole heap that reduces memory: the one these flags make clear the old generation. */
export const MEMORY_REDUCING_COLLECTION = { type: 'major', execution: 'sync', flavor: 'last-resort' } as const;

/** V8 13 and later (Node 24) have `--zero-unused-memory`; older V8 (Node 22, and 23's 12.9) does not. */
export const ZEROES_UNUSED_MEMORY = Number(process.versions.v8.split('.')[0]) >= 13;

/**
 * V8 13: a memory-reducing collection zero-fills what it frees and does not
 * give back (`--zero-unused-memory`). Older V8: every full collection
 * compacts (`--compact-on-every-full-gc`), moving the live objects off the
 * old generation's pages and giving the pages back; the workers run with it
 * on, the server switches it on around its own collection alone.
 */
export const OLD_GENERATION_CLEARING_FLAG = ZEROES_UNUSED_MEMORY ? '--zero-unused-memory' : '--compact-on-every-full-gc';
