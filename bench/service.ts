/**
 * Starts the real service for the benchmark with the tests' starter: a free
 * loopback port, a known key, the given number of workers, and a rate limit
 * high enough never to answer 429, the bench's EINVOICE_RULES, and any settings of the caller's (a signing
 * identity). Everything else is as configured by default.
 */
import { parseMetrics } from '../test/support/metrics.js';
import { startService, type Service } from '../test/support/service.js';

/** The sum of a family's samples (every label) in the service's own metrics. */
export async function metricTotal(service: Service, family: string): Promise<number> {
  const samples = [...parseMetrics(await (await fetch(`${service.url}/metrics`)).text())].filter(
    ([key]) => key === family || key.startsWith(`${family}{`),
  );
  return samples.length > 0 ? samples.reduce((sum, [, value]) => sum + value, 0) : Number.NaN;
}

/** EINVOICE_RULES of the bench's own environment, when set: E1-fx runs the operator's business rules too. */
export function startBenchService(workers: number, env: Record<string, string> = {}): Promise<Service> {
  const rules: Record<string, string> = process.env.EINVOICE_RULES ? { EINVOICE_RULES: process.env.EINVOICE_RULES } : {};
  return startService({ WORKERS: String(workers), RATE_LIMIT_PER_MINUTE: '1000000', ...rules, ...env });
}
