/**
 * Load generation with autocannon: a fixed number of identical POSTs over a
 * fixed number of keep-alive connections. Each response's latency (ms, as a
 * float) and completion time are recorded here, because autocannon's own
 * histogram keeps whole milliseconds only.
 */
import autocannon from 'autocannon';
import { TEST_KEY } from '../test/support/service.js';

export interface LoadRun {
  connections: number;
  requests: number;
  /** Latency of each 2xx response, ms, in completion order. */
  latencies: number[];
  /** performance.now() at each response (any status), in completion order. */
  completedAt: number[];
  /** Responses that were not 2xx, and socket errors or timeouts. */
  failures: number;
  elapsedMs: number;
}

export interface LoadOptions {
  url: string;
  body: Buffer;
  connections: number;
  requests: number;
  /** Called after each response with the number of responses so far. */
  onResponse?: (count: number) => void;
}

export function sendLoad(options: LoadOptions): Promise<LoadRun> {
  const latencies: number[] = [];
  const completedAt: number[] = [];
  let failures = 0;
  const started = performance.now();
  return new Promise<LoadRun>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${options.url}/v1/pdf/generate`,
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: options.body,
        connections: options.connections,
        amount: options.requests,
        timeout: 60,
      },
      (error) => {
        if (error) return reject(error);
        resolve({
          connections: options.connections,
          requests: options.requests,
          latencies,
          completedAt,
          failures,
          elapsedMs: performance.now() - started,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      completedAt.push(performance.now());
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
      else failures++;
      options.onResponse?.(completedAt.length);
    });
    instance.on('reqError', () => failures++);
  });
}

/**
 * Requests per second in steady state: responses after the first
 * `connections` (while the pipeline fills) over the time they took.
 */
export function steadyRate(run: LoadRun): number {
  const times = run.completedAt;
  const skip = Math.min(run.connections, times.length - 2);
  return ((times.length - 1 - skip) * 1000) / (times[times.length - 1]! - times[skip]!);
}
