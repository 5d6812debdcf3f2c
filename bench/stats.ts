/** Small statistics helpers for the benchmark. */

/** The p-th percentile (0..100) of `values`, linearly interpolated between ranks. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

export const median = (values: readonly number[]): number => percentile(values, 50);

export const clamp = (value: number, low: number, high: number): number => Math.min(high, Math.max(low, value));

/** Relative spread of repeated figures: (max - min) / median. */
export function spread(values: readonly number[]): number {
  if (values.length < 2) return 0;
  return (Math.max(...values) - Math.min(...values)) / median(values);
}
