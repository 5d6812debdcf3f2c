/**
 * What a worker's clean-ups cost it over a fresh worker's, and when a fresh
 * worker would be cheaper.
 *
 * Typst memoizes with comemo (0.4 in Typst 0.11, 0.5 in 0.14), which keeps
 * one "accelerator" per tracked value that compiles made since the cache
 * was last evicted, in a list for the life of the process. Every eviction
 * walks the whole list, locking and clearing each entry, and the list keeps
 * its longest length: after one 53-page report, each eviction cost 1.6 ms
 * on 0.11 and 2.9 ms on 0.14 instead of 0.002 and 0.02, for every later job
 * whatever its size (an engine's clean-up evicts twice: engine.ts). No call
 * of either binding shortens the list; only a new process starts with an
 * empty one.
 *
 * So each engine times its last eviction, which finds nothing left to evict
 * and so is the walk alone, and the worker sums what those walks cost above
 * the least each engine has shown. Once the sum reaches what the worker's
 * own start cost (and the load of what it loaded since: the e-invoices'
 * schemas), it asks to be replaced: the rule for renting skis (rent
 * until the rent paid equals the price), which never pays more than twice
 * what the best choice made in hindsight would have. A walk counts at the
 * lesser of its own time and the one before it on the same engine, so that
 * a worker descheduled during one eviction is not taken for a longer list:
 * the list never shortens, so two walks in a row cost alike.
 */
import type { TypstEngine } from './engine.js';

export class EvictionCost {
  /** Per engine: the least walk seen, and the last one. */
  private readonly walks = new Map<TypstEngine, { least: number; last: number }>();
  private paidMs = 0;

  /** `replacementMs`: what a new worker costs, the CPU time this one took to start. */
  constructor(private replacementMs: number) {}

  /** What else a new worker would spend again before it is as far as this one (the e-invoices' schemas, loaded on first use). */
  addToPrice(ms: number): void {
    this.replacementMs += ms;
  }

  /** After an engine's clean-up (or at its start, for a first measure): counts its walks. */
  record(engine: TypstEngine): void {
    const { walkMs, evictions } = engine.lastEviction;
    const seen = this.walks.get(engine);
    if (!seen) {
      this.walks.set(engine, { least: walkMs, last: walkMs });
      return;
    }
    const walk = Math.min(walkMs, seen.last);
    seen.last = walkMs;
    seen.least = Math.min(seen.least, walkMs);
    this.paidMs += (walk - seen.least) * evictions;
  }

  /** Whether the extra walks have cost as much as a new worker would. */
  get replacementDue(): boolean {
    return this.paidMs >= this.replacementMs;
  }
}
