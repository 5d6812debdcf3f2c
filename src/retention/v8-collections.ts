/**
 * V8's collections as this process sees them: a collector of its own, and
 * the kind of each collection Node reports (heap-scrub.ts decides by them,
 * http/process-metrics.ts counts them).
 */
import { constants, type PerformanceEntry } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Collect } from './old-generation-clearing.js';

/**
 * V8's collector, without exposing `gc` to the rest of the process: the
 * flag is set only while a fresh context fetches it. Each call gives a
 * collector of its own.
 */
export function v8Collector(): Collect {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as Collect;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** Node 24 and later: V8's young collection that marks rather than copies. */
export const MINOR_MARK_SWEEP = (constants as { NODE_PERFORMANCE_GC_MINOR_MARK_SWEEP?: number }).NODE_PERFORMANCE_GC_MINOR_MARK_SWEEP;

/** The kind of collection a `gc` performance entry reports (`constants.NODE_PERFORMANCE_GC_*`), or undefined. */
export function collectionKind(entry: PerformanceEntry): number | undefined {
  return (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
}
