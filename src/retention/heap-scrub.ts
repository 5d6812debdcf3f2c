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
 * A moment after an answer, unless a later request is in flight
 * (scrub-timer.ts), the server collects its garbage, and V8 clears what
 * that frees (old-generation-clearing.ts). A request's strings stay in the
 * young generation unless they were live through two young collections
 * (V8 copies what lives through one within the young generation, and moves
 * to the old one what lives through a second), or through a collection of
 * the whole heap, which moves every live young object. So the young
 * generation is collected, and then the whole heap in a memory-reducing
 * collection that clears the old generation (a collection of the whole
 * heap frees its dead strings but leaves them where they were), when:
 * V8 collected the whole heap since the last scrub; or a request was live
 * through two young collections (V8's own or the scrub's, from its start
 * to LIVE_AFTER_ANSWER_MS after its answer); or a request named a header
 * the server had not seen (its name is in the old generation from the
 * start: header-names.ts); or its URL was none of the server's paths (such
 * a URL was found there too: a GET of a path under the page's prefix,
 * after a few of them), or its head came in pieces, or a client's bytes
 * were no request (kept-alive-heads.ts, client errors: Node may make
 * strings of such a head before any request starts). Else the young
 * generation alone.
 *
 * The whole heap is not collected for less: its collection makes V8 drop
 * most of the server's optimized code and the bytecode it has aged, and
 * the next few hundred requests cost 0.3 to 0.5 ms more each while V8 compiles them again
 * (W1, blocks of 260 requests, each after a quiet spell; docs/performance.md).
 * It once followed every young collection of V8's, which comes every 150
 * or so one-page requests. On V8 older than 13 compaction is switched on for
 * that collection alone, so V8's own full collections under load do not pay
 * for it. While a request is in flight the scrub collects the young
 * generation alone, which frees the answered requests' strings and clears
 * them, and moves the live ones of the requests in flight, which counts as
 * one of their young collections. What V8's own full collections free in the old generation under
 * load stays until the next quiet spell, whose collection sweeps every
 * page again. What it costs:
 * docs/retention.md. A full collection also frees the hidden classes no
 * object uses any more, and V8 throws away the optimized code that referred
 * to them: the JSON scanner keeps an instance of its own for that reason
 * (bytes/json-scanner.ts).
 */
import type { IncomingMessage } from 'node:http';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { HeaderNames } from './header-names.js';
import { type Collect, MEMORY_REDUCING_COLLECTION, OLD_GENERATION_CLEARING_FLAG, ZEROES_UNUSED_MEMORY } from './old-generation-clearing.js';
import { collectionKind, MINOR_MARK_SWEEP, v8Collector } from './v8-collections.js';

/**
 * The collections of V8's that move every live young object to the old
 * generation: of the whole heap (which V8 also makes on its own, under the
 * pressure of large buffers, say), and the young collection that marks
 * rather than copies (`--minor-ms`), whose pages move whole. One since the
 * last scrub has the next collect the whole heap.
 */
const MOVING_ALL = new Set<number>([constants.NODE_PERFORMANCE_GC_MAJOR, ...(MINOR_MARK_SWEEP === undefined ? [] : [MINOR_MARK_SWEEP])]);

/** V8's young collection that copies: what lives through two is moved to the old generation. */
const YOUNG = constants.NODE_PERFORMANCE_GC_MINOR;

/**
 * How long after its answer a request's strings may still be live: Node's
 * parser and the log line let go of them within a turn or two of the event
 * loop (forgetHead runs in the next). Less than the quiet spell before a
 * scrub (scrub-timer.ts), so that a scrub's own young collection once quiet
 * is never a second one for an answered request.
 */
export const LIVE_AFTER_ANSWER_MS = 50;

/**
 * How long before a request starts its strings may already be live: Node
 * makes them as it parses the head, in the same turn as the request starts
 * (a head that came in pieces counts otherwise: oldGenerationStrings).
 */
const LIVE_BEFORE_START_MS = 5;

/** Answered requests older than this no longer count any collection (Node reports a collection within a few turns); kept at most twice as long. */
const FORGOTTEN_AFTER_MS = 10_000;

/** The scrub's latest collections known by their times: Node reports them within a few turns, scrubs come at most every QUIET_MS. */
const OWN_COLLECTIONS_KEPT = 8;

/** A request: the how-manyth it came, when it started and was answered (performance.now()), and the young collections it lived through. */
export interface InFlight {
  order: number;
  startedAt: number;
  answeredAt: number | undefined;
  youngCollections: number;
}

export class HeapScrub {
  private readonly gc: Collect;
  /** When the latest of V8's collections in MOVING_ALL started (performance.now()), as far as Node has reported. */
  private lastCollectionAt = Number.NEGATIVE_INFINITY;
  /** When the last scrub's own collections ended: the ones that start later are V8's. */
  private lastScrubEndedAt = Number.NEGATIVE_INFINITY;
  /** When the scrub's latest collections ran ([start, end]): young collections reported in them are its own, counted as it made them. */
  private readonly ownCollections: [number, number][] = [];
  /** Requests answered lately: each may still live, or have lived, through a young collection Node has yet to report. */
  private answeredLately: InFlight[] = [];
  /** Requests received so far. */
  private received = 0;
  /** The latest to come (InFlight.order) of the requests answered so far. */
  private lastAnswered = 0;
  /** Requests received and not yet answered (or abandoned). */
  private readonly inFlight = new Set<InFlight>();
  /** The scrub asked for, while it waits for the reports (collect()). */
  private waiting: Promise<void> | undefined;
  /** The header names requests have named so far, as hashes (header-names.ts). */
  private readonly headerNames = new HeaderNames();
  /**
   * A request since the last scrub may have left strings in the old generation: it lived through two young
   * collections, named a header the server had not seen (its name is there from the start), or may have left strings
   * whatever the collections (stringsMayOutliveCollections).
   */
  private oldGenerationStrings = false;

  constructor() {
    setFlagsFromString('--clear-free-memory');
    if (ZEROES_UNUSED_MEMORY) setFlagsFromString(OLD_GENERATION_CLEARING_FLAG);
    this.gc = v8Collector();
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = collectionKind(entry);
        if (kind !== undefined && MOVING_ALL.has(kind)) this.lastCollectionAt = Math.max(this.lastCollectionAt, entry.startTime);
        if (kind === YOUNG && !this.ownCollections.some(([from, to]) => entry.startTime >= from && entry.startTime <= to)) {
          this.youngCollection(entry.startTime);
        }
      }
    }).observe({ entryTypes: ['gc'] });
  }

  /**
   * When a request arrives, with its head as Node read it (rawHeaders:
   * name, value, name, ...). Returns what its answered() is to be given.
   */
  requestStarts(rawHeaders: string[]): InFlight {
    if (this.headerNames.anyNew(rawHeaders)) this.oldGenerationStrings = true;
    const request: InFlight = { order: ++this.received, startedAt: performance.now(), answeredAt: undefined, youngCollections: 0 };
    this.inFlight.add(request);
    return request;
  }

  /**
   * Whether a request in flight came after the last one answered did
   * (scrub-timer.ts). Compared by the order they came in, not by when the
   * answer ended: Node may read a client's next request before it reports
   * the last answer's end, in the same turn of the event loop.
   */
  laterInFlight(): boolean {
    for (const request of this.inFlight) if (request.order > this.lastAnswered) return true;
    return false;
  }

  /**
   * When a request may leave strings in the old generation whatever the
   * collections: its URL is none of the server's paths, or its head came in
   * pieces (kept-alive-heads.ts, which tells it before the request starts
   * here), or a client's bytes were no request (client errors).
   */
  stringsMayOutliveCollections(): void {
    this.oldGenerationStrings = true;
  }

  /** After an answer (or an abandoned request), with what its requestStarts() returned. */
  answered(request: InFlight): void {
    this.inFlight.delete(request);
    this.lastAnswered = Math.max(this.lastAnswered, request.order);
    request.answeredAt = performance.now();
    // In the order they were answered: once the oldest is twice as old as it need be, the old half goes in one pass
    // (a pass at every answer would cost a busy server one look at each of thousands).
    const forgotten = request.answeredAt - FORGOTTEN_AFTER_MS;
    if (this.answeredLately.length > 0 && this.answeredLately[0]!.answeredAt! < forgotten - FORGOTTEN_AFTER_MS) {
      this.answeredLately = this.answeredLately.filter((lately) => lately.answeredAt! >= forgotten);
    }
    this.answeredLately.push(request);
  }

  /** A young collection that started at `at`: it moved the strings of the requests live then, a second time for some. */
  private youngCollection(at: number): void {
    const liveAt = (request: InFlight) =>
      request.startedAt - LIVE_BEFORE_START_MS <= at &&
      (request.answeredAt === undefined || at <= request.answeredAt + LIVE_AFTER_ANSWER_MS);
    for (const request of [...this.inFlight, ...this.answeredLately]) {
      if (liveAt(request) && ++request.youngCollections >= 2) this.oldGenerationStrings = true;
    }
  }

  /**
   * When scrub-timer.ts says: the young generation, and the whole heap,
   * reducing memory, when V8 made a collection of its own since the last
   * scrub. Node reports a collection only when the event loop next wakes,
   * so the scrub decides after two turns of it, in which the reports of the
   * collections made before come; and two more for as long as requests
   * come and go in them. With a request still in flight, the young
   * generation alone (collectWhileBusy). Resolves once done.
   */
  collect(): Promise<void> {
    this.waiting ??= new Promise<void>((resolve) => {
      // `from`: the requests received when the turns began; more since, all answered, means they came and went.
      const decide = (from: number) =>
        setImmediate(() =>
          setImmediate(() => {
            if (this.inFlight.size === 0 && this.received > from) return decide(this.received);
            if (this.inFlight.size === 0) this.collectNow();
            else this.collectWhileBusy();
            this.waiting = undefined;
            resolve();
          }),
        );
      decide(this.received);
    });
    return this.waiting;
  }

  private collectNow(): void {
    const full = this.lastCollectionAt > this.lastScrubEndedAt || this.oldGenerationStrings;
    this.oldGenerationStrings = false;
    // Every answered request's time to live is over (no request came for longer), and Node has reported the young
    // collections made in it: none of them counts another.
    this.answeredLately = [];
    const startedAt = performance.now();
    try {
      this.gc({ type: 'minor' });
      if (full) this.collectWholeHeap();
    } finally {
      this.scrubbed(startedAt);
    }
  }

  /**
   * The young generation alone, while requests are in flight: the whole
   * heap's collection (20 to 70 ms of the event loop) waits for quiet, and
   * for what must wait with it: a collection of V8's own since the last
   * scrub, which a later scrub's would hide (its reports then count as the
   * scrub's own).
   */
  private collectWhileBusy(): void {
    if (this.lastCollectionAt > this.lastScrubEndedAt) this.oldGenerationStrings = true;
    const startedAt = performance.now();
    try {
      this.gc({ type: 'minor' });
      this.youngCollection(startedAt);
    } finally {
      this.scrubbed(startedAt);
    }
  }

  /** After the scrub's collections that began at `startedAt`: Node reports them a turn or two later, as the scrub's own. */
  private scrubbed(startedAt: number): void {
    this.lastScrubEndedAt = performance.now();
    this.ownCollections.push([startedAt, this.lastScrubEndedAt]);
    if (this.ownCollections.length > OWN_COLLECTIONS_KEPT) this.ownCollections.shift();
  }

  private collectWholeHeap(): void {
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
