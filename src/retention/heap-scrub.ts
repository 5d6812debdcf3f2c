/**
 * Node's HTTP parser makes a JavaScript string of every header it reads:
 * `Authorization: Bearer <key>` among them, a wrong key too, whatever the
 * API then does with it. The service cannot wipe a string; V8 frees it
 * when it collects garbage, and by default leaves its bytes where they
 * were. A request that lives through two young-generation collections
 * (one waiting on a compile, say) has its strings moved to the old
 * generation, whose freed memory a regular collection only reuses: before
 * this scrub, a key used once was still in the server's memory 32 s and 40
 * requests later.
 *
 * A connection kept alive also keeps its last request, head and all: Node's
 * parser refers to it until the next request comes. So once the answer is
 * done, the request lets go of its head (forgetHead).
 *
 * Once the server has answered and had no request in flight for a moment
 * (scrub-timer.ts) it collects its garbage, and V8 clears what that frees
 * (old-generation-clearing.ts). A request's strings stay in the young
 * generation unless the request lived through a collection of it: then
 * the young generation is collected (a collection of the whole heap frees
 * its dead strings but leaves them where they were), and the whole heap in
 * a memory-reducing collection that clears the old generation; else the
 * young generation alone. On V8 older than 13 compaction is switched on for
 * that collection alone, so V8's own full collections under load do not pay
 * for it. While requests keep coming no collection is forced: what V8's own
 * full collections free in the old generation stays until the next quiet
 * spell, whose collection sweeps every page again. What it costs:
 * docs/retention.md. A full collection also frees the hidden classes no
 * object uses any more, and V8 throws away the optimized code that referred
 * to them: the JSON scanner keeps an instance of its own for that reason
 * (bytes/json-scanner.ts).
 */
import type { IncomingMessage } from 'node:http';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Collect, MEMORY_REDUCING_COLLECTION, OLD_GENERATION_CLEARING_FLAG, ZEROES_UNUSED_MEMORY } from './old-generation-clearing.js';

export class HeapScrub {
  private readonly gc: Collect;
  /**
   * Young-generation collections so far that V8 made on its own (reported
   * after the fact, a turn or more later): those of collect() are left out.
   */
  private youngCollections = 0;
  /**
   * When collect()'s last collections ran (performance.now()). V8 reported
   * them as late as mid-way through the next request, which then counted
   * as having lived through a young collection: its quiet spell collected
   * the whole heap again, and so on. Requests sent 100 to 135 ms after
   * each answer cost the server 83 to 107 ms of CPU each that way (two full
   * collections, on four threads), against 6 ms.
   */
  private ownFrom = Number.NaN;
  private ownTo = Number.NaN;
  /** A request answered since the last collection lived through a young one: its strings may be old. */
  private oldMayHoldRequests = true;
  /** Requests received and not yet answered (or abandoned). */
  private inFlight = 0;

  get requestsInFlight(): number {
    return this.inFlight;
  }

  constructor() {
    setFlagsFromString('--clear-free-memory');
    if (ZEROES_UNUSED_MEMORY) setFlagsFromString(OLD_GENERATION_CLEARING_FLAG);
    // V8's collector, for this module alone: the flag is set only while a fresh context fetches `gc`.
    setFlagsFromString('--expose-gc');
    this.gc = runInNewContext('gc') as Collect;
    setFlagsFromString('--no-expose-gc');
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
        const own = entry.startTime >= this.ownFrom && entry.startTime <= this.ownTo;
        if (detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR && !own) this.youngCollections++;
      }
    }).observe({ entryTypes: ['gc'] });
  }

  /** When a request arrives: what answered() compares with. */
  requestStarts(): number {
    this.inFlight++;
    return this.youngCollections;
  }

  /** After an answer (or an abandoned request), with requestStarts() at its request. */
  answered(started: number): void {
    this.inFlight--;
    if (this.youngCollections > started) this.oldMayHoldRequests = true;
  }

  /** Once the server is quiet (scrub-timer.ts): the young generation, or the whole heap, reducing memory, when it may hold requests. */
  collect(): void {
    if (this.inFlight > 0) return;
    this.ownFrom = performance.now();
    this.ownTo = Number.POSITIVE_INFINITY;
    try {
      this.collectNow();
    } finally {
      this.ownTo = performance.now();
    }
  }

  private collectNow(): void {
    this.gc({ type: 'minor' });
    if (!this.oldMayHoldRequests) return;
    this.oldMayHoldRequests = false;
    // V8 13's flag is set once (constructor); older V8's compaction only for this collection.
    const compactNow = !ZEROES_UNUSED_MEMORY;
    if (compactNow) setFlagsFromString(OLD_GENERATION_CLEARING_FLAG);
    try {
      this.gc(MEMORY_REDUCING_COLLECTION);
    } finally {
      if (compactNow) setFlagsFromString(OLD_GENERATION_CLEARING_FLAG.replace('--', '--no-'));
    }
  }
}

/** Drops a request's header strings once its answer is done and nothing reads them any more. */
export function forgetHead(request: IncomingMessage): void {
  request.rawHeaders.length = 0;
  request.headers = {};
  request.rawTrailers.length = 0;
}
