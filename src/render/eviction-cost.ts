/**
 * What a worker's clean-ups, and the slower compiles that go with them,
 * cost it over a new worker's, and when a new worker would be cheaper.
 *
 * Typst memoizes with comemo (0.4 in Typst 0.11, 0.5 in 0.14), which keeps
 * one "accelerator" per value that compiles tracked since the cache was
 * last evicted, in a list for the life of the process. Every eviction walks
 * the whole list, locking and clearing each entry, and the list keeps its
 * longest length: after one 53-page report, each eviction cost 1.6 ms on
 * 0.11 and 2.9 ms on 0.14 instead of 0.002 and 0.02, for every later job
 * whatever its size (an engine's clean-up evicts once, one in 16 twice:
 * engine.ts). No call of either binding shortens the list; only a new
 * process starts with an empty one.
 *
 * Each engine times the walk of one clean-up in 16 (engine.ts, Eviction).
 * What a timed walk took above the least its engine has shown after a job
 * is what the list's growth costs, counted:
 *
 * - once for each walk the timed one stands for (a new worker's list grows
 *   with its first documents too);
 * - and for the compiles on the engine since its last timed walk, the
 *   one just before it included, which the same history makes slower in
 *   proportion to their own size: COMPILE_SLOWDOWN_PER_WALK_MS of their
 *   CPU time per millisecond the walk grew.
 *
 * A long compile counts whole, although the slowdown was measured on
 * compiles of 10 to 50 ms. The one that grew the list counts nothing (its
 * growth shows from the timed walk after next), but long ones after it
 * bring their worker's replacement close, and the shorter documents that
 * follow them run on a new worker. In bench-like rounds (the 53-page
 * report, then 9 MB of data) that paid: the workers' CPU per W4 document
 * 51.8 to 53.4 ms, against 54.7 to 57.5 with each compile counted up to
 * 50 ms and 56.0 to 59.1 with the walks alone.
 * A stream of one 53-page report for every letter, where a new worker's
 * list grows back at once, had two workers replaced in 120 documents and
 * cost 0.6% more.
 *
 * A timed walk counts at the lesser of its own time and the one before it
 * on the same engine, so that a worker descheduled during one eviction is
 * not taken for a longer list: the list never shortens, so two timed walks
 * in a row cost alike unless it grew between them, and then the growth
 * counts from the next one on.
 *
 * Once the sum reaches the price of a new worker, the worker asks to be
 * replaced: the rule for renting skis (rent until the rent paid equals the
 * price), which, with the price right, pays at most twice what the best
 * choice in hindsight would have. The price is PRICE_PER_START times what
 * this worker's start cost it: a new worker pays its start, and its first
 * documents run slower while V8 compiles the code they use.
 */
import type { Eviction } from './engine.js';

/**
 * How much slower a compile is after its engine's walk grew, per
 * millisecond of growth, as a share of the compile's own CPU time.
 * Measured in one process with the workers' malloc settings, CPU ms of a
 * job after the history against before it: the 0.11 letter (about 10 ms)
 * after 53-page reports, compile +1.0 to +1.7 for a walk 1.6 ms longer
 * (0.06 to 0.10); the e-invoice (about 10 ms) after 200-row reports on
 * 0.14, +0.5 to +0.7 for 0.28 ms (0.18 to 0.25); W4, 9 MB of data (about
 * 49 ms), +8 to +9 in all after four 53-page reports, the walk 1.6 of it
 * (0.09), and 13 to 16 ms a document more than on a fresh service in the
 * bench's rounds at c=4.
 */
const COMPILE_SLOWDOWN_PER_WALK_MS = 0.15;

/**
 * A new worker costs about twice its start: one worker, its first 25 jobs
 * against its next 25, the 0.11 letter 321 and 317 ms of CPU, the 0.14
 * letter 192 and 178, the Factur-X e-invoice 656 and 456, after a start of
 * 200 ms (about 135 ms on a faster machine).
 */
const PRICE_PER_START = 2;

/** CPU milliseconds of this process (all its threads) since `since`, or since it started: what the rule counts in. */
export function cpuMsSince(since?: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(since);
  return (user + system) / 1000;
}

/** An engine, as far as its clean-ups' cost goes. */
export interface Evicting {
  takeEviction(): Eviction;
}

export class EvictionCost {
  /** Per engine: the least walk seen after a job, and the last one. */
  private readonly walks = new Map<Evicting, { least: number; last: number }>();
  /** Per engine: CPU time of its compiles since its last timed walk. */
  private readonly cpuSinceWalk = new Map<Evicting, number>();
  private paidMs = 0;
  private readonly priceMs: number;

  /** `startMs`: the CPU time this worker took to start. */
  constructor(startMs: number) {
    this.priceMs = startMs * PRICE_PER_START;
  }

  /** After each compile, before its engine's clean-up: its CPU time. */
  addCompile(engine: Evicting, cpuMs: number): void {
    this.cpuSinceWalk.set(engine, (this.cpuSinceWalk.get(engine) ?? 0) + cpuMs);
  }

  /** After an engine's clean-up: counts its walks, and the compiles since its last timed one, if it timed one. */
  record(engine: Evicting): void {
    const { walkMs, evictions } = engine.takeEviction();
    if (evictions === 0) return;
    const cpuMs = this.cpuSinceWalk.get(engine) ?? 0;
    this.cpuSinceWalk.set(engine, 0);
    const seen = this.walks.get(engine);
    if (!seen) {
      this.walks.set(engine, { least: walkMs, last: walkMs });
      return;
    }
    const walk = Math.min(walkMs, seen.last);
    seen.last = walkMs;
    seen.least = Math.min(seen.least, walkMs);
    this.paidMs += (walk - seen.least) * (evictions + COMPILE_SLOWDOWN_PER_WALK_MS * cpuMs);
  }

  /** Whether the extra walks, and the compiles they go with, have cost as much as a new worker would. */
  get replacementDue(): boolean {
    return this.paidMs >= this.priceMs;
  }
}
