/**
 * Token-set Jaccard similarity (seed §7.1.0.1 measures response diversity as the mean pairwise
 * token-set Jaccard distance; question synthesis filters near-duplicates with it).
 */

/** The distinct lowercase tokens of a text: maximal runs of Unicode letters and digits. */
export function tokenSet(text: string): ReadonlySet<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

/** |a ∩ b| / |a ∪ b|; two empty sets are identical (1). */
export function jaccardSimilarity(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let shared = 0;
  for (const token of small) if (large.has(token)) shared += 1;
  return shared / (a.size + b.size - shared);
}

/** 1 − {@link jaccardSimilarity}. */
export function jaccardDistance(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  return 1 - jaccardSimilarity(a, b);
}
