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
 * generation unless the request lived through a collection of it. So when
 * V8 collected its young generation since the first request the last
 * scrub did not see, the young generation is collected (a collection of
 * the whole heap frees its dead strings but leaves them where they were),
 * and the whole heap in a memory-reducing collection that clears the old
 * generation; else the young generation alone. On V8 older than 13 compaction is switched on for
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
   * When the latest young-generation collection V8 made started
   * (performance.now(), as reported). Node reports a collection only when
   * the event loop next wakes: a collection in a request's last turn after
   * its answer, one at the scrub's end during the next request. So the
   * scrub compares start times, once the reports have come (collect()),
   * rather than counting reports while requests are in flight.
   */
  private lastYoungAt = Number.NEGATIVE_INFINITY;
  /** When the first request since the last scrub arrived (none yet: undefined). */
  private firstRequestAt: number | undefined;
  /** The first scrub collects the whole heap: the server's start made strings too. */
  private started = false;
  /** Requests received and not yet answered (or abandoned). */
  private inFlight = 0;
  /** A scrub waits for the reports of the collections so far (collect()). */
  private waiting: Promise<void> | undefined;

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
        if (detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) this.lastYoungAt = Math.max(this.lastYoungAt, entry.startTime);
      }
    }).observe({ entryTypes: ['gc'] });
  }

  /** When a request arrives. */
  requestStarts(): void {
    this.inFlight++;
    this.firstRequestAt ??= performance.now();
  }

  /** After an answer (or an abandoned request). */
  answered(): void {
    this.inFlight--;
  }

  /**
   * Once the server is quiet (scrub-timer.ts): the young generation, or the
   * whole heap, reducing memory, when a young collection started since the
   * first request the last scrub did not see. Two turns of the event loop
   * first, in which Node delivers the reports of the collections so far.
   * Resolves once done (or given up for a request that came meanwhile: the
   * next quiet spell's scrub counts it).
   */
  collect(): Promise<void> {
    this.waiting ??= new Promise<void>((resolve) =>
      setImmediate(() =>
        setImmediate(() => {
          this.waiting = undefined;
          if (this.inFlight === 0) this.collectNow();
          resolve();
        }),
      ),
    );
    return this.waiting;
  }

  private collectNow(): void {
    const full = !this.started || (this.firstRequestAt !== undefined && this.lastYoungAt >= this.firstRequestAt);
    this.started = true;
    // Reset first: the scrub's own young collection starts before any later request, and so never counts.
    this.firstRequestAt = undefined;
    this.gc({ type: 'minor' });
    if (!full) return;
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
