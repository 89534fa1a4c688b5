/**
 * Small helpers the benchmarks share: a seeded random generator, so that workloads are the same
 * from run to run, and the median.
 */

/** A deterministic generator of numbers in [0, 1) (mulberry32). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The median (the upper one of an even count); 0 for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  return [...values].sort((a, b) => a - b)[values.length >> 1];
}
