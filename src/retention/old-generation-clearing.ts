/**
 * V8 zero-fills what a collection of the young generation frees
 * (`--clear-free-memory`), but nothing it frees in the old generation, where
 * a string goes once it has lived through two young collections: a regular
 * collection of the whole heap frees it and leaves its bytes where they
 * were, and so, by itself, does `--clear-free-memory`. A memory-reducing
 * collection (`flavor: 'last-resort'`) gives back the whole OS pages it
 * empties; what it frees beyond them is cleared only where V8 is told to:
 *
 * - V8 13 and later (Node 24) zero-fill the rest (`--zero-unused-memory`);
 * - older V8 (Node 22, and 23's 12.9) lacks that flag. There every full
 *   collection must compact (`--compact-on-every-full-gc`): it moves the
 *   live objects off the old generation's pages and gives the pages back.
 *
 * Measured with a marker in a request's header, a 6,000-row compile and
 * refused requests beside it (2 to 4 young collections while it waited):
 * after a regular full collection the server still held the marker in 3 of
 * 5 runs; after a memory-reducing one alone in 2 of 8; with the flag of its
 * V8 in 0 of 8, on Node 24 and on Node 22.
 */
export const ZEROES_UNUSED_MEMORY = Number(process.versions.v8.split('.')[0]) >= 13;

/** The V8 flag that makes a memory-reducing collection clear what it frees in the old generation. */
export const OLD_GENERATION_CLEARING_FLAG = ZEROES_UNUSED_MEMORY ? '--zero-unused-memory' : '--compact-on-every-full-gc';
