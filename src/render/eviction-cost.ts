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
 * Each engine times the walk of one clean-up in 16 (engine.ts, Eviction),
 * and the worker sums what the walks cost above the least each engine has
 * shown after a job, times the walks each timed one stands for (a new
 * worker's list grows with its first documents too), and times
 * COMPILE_SLOWDOWN_PER_WALK for the compiles, which the same history makes
 * slower by about as much. A timed walk counts at the lesser of its own
 * time and the one before it on the same engine, so that a worker
 * descheduled during one eviction is not taken for a longer list: the list
 * never shortens, so two timed walks in a row cost alike unless it grew
 * between them, and then the growth counts from the next one on.
 *
 * Once the sum reaches the price of a new worker, the worker asks to be
 * replaced: the rule for renting skis (rent until the rent paid equals the
 * price), which, with the price right, pays at most twice what the best
 * choice in hindsight would have. The price is what this worker spent to
 * get going: its start, and its first PRICED_JOBS jobs of each kind
 * (engine, e-invoice or not) whole, the first e-invoice with the load of
 * the schemas. A new worker's first jobs are its dearest: its first 25
 * e-invoices cost it about 220 ms more than the next 25, most of it V8
 * compiling in the background. Counting those jobs whole, not just what
 * they cost over later ones, errs towards keeping the worker; but a job
 * counts at most PRICED_JOB_MAX_MS, so that a long document among them
 * does not price the worker at seconds.
 */
import type { Eviction } from './engine.js';

/** Jobs of each kind whose CPU counts into the price (see above). */
const PRICED_JOBS = 25;

/**
 * The most one job counts into the price. What makes a new worker's first
 * jobs dear (V8 compiling the code they run, the schemas loaded) does not
 * grow with a document's length: the dearest, a worker's first e-invoice,
 * took 66 to 104 ms of CPU in all, where a 53-page report takes 430 ms on
 * any worker.
 */
const PRICED_JOB_MAX_MS = 150;

/**
 * What a job after a longer list pays, as a multiple of its walk's extra:
 * the walk itself, and as much again in a slower compile (comemo's tables
 * sized by the longest document, sparser to look up). One process, the
 * workers' malloc settings, CPU ms of a job after the history against
 * before it: the 0.11 letter after 53-page reports, compile +1.0 to +1.7,
 * clean-up +1.5; the e-invoice after 200-row reports on 0.14, compile +0.5
 * to +0.7, clean-up +0.4 to +0.5.
 */
const COMPILE_SLOWDOWN_PER_WALK = 2;

/** An engine, as far as its clean-ups' cost goes. */
export interface Evicting {
  takeEviction(): Eviction;
}

export class EvictionCost {
  /** Per engine: the least walk seen after a job, and the last one. */
  private readonly walks = new Map<Evicting, { least: number; last: number }>();
  private paidMs = 0;
  /** Jobs counted into the price, by kind. */
  private readonly pricedJobs = new Map<string, number>();

  /** `priceMs`: what a new worker costs so far, the CPU time this one took to start. */
  constructor(private priceMs: number) {}

  /** After each job: its CPU time counts into the price (up to PRICED_JOB_MAX_MS) if it is one of the first PRICED_JOBS of its kind. */
  addJob(kind: string, cpuMs: number): void {
    const count = this.pricedJobs.get(kind) ?? 0;
    if (count >= PRICED_JOBS) return;
    this.pricedJobs.set(kind, count + 1);
    this.priceMs += Math.min(cpuMs, PRICED_JOB_MAX_MS);
  }

  /** After an engine's clean-up: counts its walks, if it timed one. */
  record(engine: Evicting): void {
    const { walkMs, evictions } = engine.takeEviction();
    if (evictions === 0) return;
    const seen = this.walks.get(engine);
    if (!seen) {
      this.walks.set(engine, { least: walkMs, last: walkMs });
      return;
    }
    const walk = Math.min(walkMs, seen.last);
    seen.last = walkMs;
    seen.least = Math.min(seen.least, walkMs);
    this.paidMs += (walk - seen.least) * evictions * COMPILE_SLOWDOWN_PER_WALK;
  }

  /** Whether the extra walks, and the compiles they go with, have cost as much as a new worker would. */
  get replacementDue(): boolean {
    return this.paidMs >= this.priceMs;
  }
}
