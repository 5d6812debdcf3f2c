/**
 * The Node.js process metrics (`process_*`, `nodejs_*`): prom-client's own
 * collectors, all but its event-loop delay histogram, and in its place the
 * time the event loop was busy.
 *
 * That histogram (perf_hooks' monitorEventLoopDelay) wakes the process
 * every 10 ms, busy or idle: on a 2-core machine each wake cost the server
 * about 0.03 ms of CPU, 1.9 ms for a document that compiles in 0.6 s, which
 * is more than the whole server's allowance for answering it. It also
 * reports whole sampling intervals, so its figures never read below 10 ms.
 * The busy time costs nothing between scrapes: it is read from libuv's
 * loop counters when /metrics is scraped. prom-client's collectDefaultMetrics
 * cannot leave the histogram out, so its collectors are registered one by one
 * (the files it lists in lib/defaultMetrics.js, at the version the lock file
 * pins), all but its garbage collections too (see collectGarbageCollections).
 */
import { constants, PerformanceObserver, performance } from 'node:perf_hooks';
import { Counter, Histogram, type Registry } from 'prom-client';
import { collectionKind } from '../retention/v8-collections.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';

const COLLECTORS = [
  processCpuTotal,
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  processResources,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
];

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * The garbage collections, under prom-client's name, labels and buckets.
 * Its own collector counts only the first of the collections V8 reports
 * together (`list.getEntries()[0]`, prom-client 15.1.3): a quiet spell's
 * young collection and the two of the whole heap after it (heap-scrub.ts)
 * counted as one young one. This one counts each.
 */
function collectGarbageCollections(registry: Registry, prefix: string): void {
  const durations = new Histogram({
    name: `${prefix}nodejs_gc_duration_seconds`,
    help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
    labelNames: ['kind'],
    buckets: [0.001, 0.01, 0.1, 1, 2, 5],
    registers: [registry],
  });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = GC_KINDS[collectionKind(entry) ?? -1];
      if (kind) durations.observe({ kind }, entry.duration / 1000);
    }
  }).observe({ entryTypes: ['gc'] });
}

export function collectProcessMetrics(registry: Registry, prefix: string): void {
  for (const collect of COLLECTORS) collect(registry, { prefix });
  collectGarbageCollections(registry, prefix);
  // A counter, not a ratio since the last scrape: each scraper takes the rate over its own window.
  let counted = 0;
  new Counter({
    name: `${prefix}nodejs_eventloop_busy_seconds_total`,
    help: 'Time the event loop spent running code rather than waiting (its utilisation is the rate of this)',
    registers: [registry],
    collect() {
      const busy = performance.eventLoopUtilization().active / 1000;
      this.inc(busy - counted);
      counted = busy;
    },
  });
}
