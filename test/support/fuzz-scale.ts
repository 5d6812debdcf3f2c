/**
 * How many cases a property test runs: its own count, times FUZZ_SCALE
 * (1 unless set; `npm run test:nightly` sets 5 for the files it runs).
 */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);

/** `n` cases, scaled by FUZZ_SCALE, and at least one. */
export const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
