/** The median and range of a figure over repeated runs: what every bench table prints. */
export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly values: readonly number[];
}

/** Median (mean of the middle two for an even count), min and max of `values`. */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error('no values to summarize');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted.at(-1)!, values };
}
