/** Pure numbers for the bench: medians of rounds, percentiles of response times. */

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The p-th percentile (0 < p ≤ 100) by linear interpolation between closest ranks. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lowValue = sorted[low] as number;
  return lowValue + ((sorted[high] as number) - lowValue) * (rank - low);
}

/**
 * The sum of every sample of one metric in a Prometheus exposition whose labels
 * include all of `labels` (e.g. all outcomes of operation="verify").
 */
export function sumOfSamples(exposition: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = labelsOf(match[2] ?? '');
    if (Object.entries(labels).every(([key, value]) => present.get(key) === value)) sum += Number(match[3]);
  }
  return sum;
}

function labelsOf(text: string): Map<string, string> {
  const labels = new Map<string, string>();
  for (const match of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    labels.set(match[1] as string, match[2] as string);
  }
  return labels;
}

/**
 * Warm-up before measuring: slices of this many seconds until CPU per request is steady, at most `maxSlices`.
 * Steady is at least `minRequests` requests served, then `steadySlices` slices in a row each within `within`
 * of the one before. The JIT optimizes by calls, not seconds: a cold miss at one connection (under a thousand
 * requests a second) can level off for a few one-second slices at twice its steady figure, still optimizing.
 */
export const WARMUP = { sliceSeconds: 1, minRequests: 15_000, maxSlices: 40, within: 0.1, steadySlices: 2 } as const;

/** One warm-up slice: the CPU µs per request it measured, and how many requests it served. */
export interface WarmupSlice {
  readonly micros: number;
  readonly requests: number;
}

/** Whether the warm-up slices so far (in order) are steady by WARMUP's rule. */
export function steady(slices: readonly WarmupSlice[]): boolean {
  if (slices.length <= WARMUP.steadySlices) return false;
  if (slices.reduce((sum, slice) => sum + slice.requests, 0) < WARMUP.minRequests) return false;
  return slices.slice(-WARMUP.steadySlices).every((slice, i) => {
    const before = (slices[slices.length - WARMUP.steadySlices - 1 + i] as WarmupSlice).micros;
    return Math.abs(slice.micros - before) <= WARMUP.within * before;
  });
}
