// Rounds of a benchmark: each round measures every target once, in a rotating order; a target's
// row is its median-rate round, and ratios are medians of the per-round ratios.

/** The median (the lower one of an even count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** The item with the median `key` (the lower one of an even count). */
export const medianBy = <T>(xs: T[], key: (x: T) => number): T => [...xs].sort((a, b) => key(a) - key(b))[Math.floor((xs.length - 1) / 2)]!;

/** The round with the median rate stands for the target (its p50/p99 are reported with it), with the errors of all the rounds. */
export function medianRow<R extends { rps: number; errors: number }>(rows: R[]): R {
  return { ...medianBy(rows, (r) => r.rps), errors: rows.reduce((n, r) => n + r.errors, 0) };
}

/** `xs` rotated left by `by`: so that no target always runs first (or right after the same other one). */
export const rotate = <T>(xs: T[], by: number): T[] => xs.map((_, i) => xs[(i + by) % xs.length]!);

/** A rate for the tables: one decimal under 100. */
export const fmtRate = (rps: number) => rps.toFixed(rps < 100 ? 1 : 0);
