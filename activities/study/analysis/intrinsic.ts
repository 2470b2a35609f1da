/**
 * Intrinsic metrics of a protocol's SFT pool (seed §7.1): scalars that should move when a
 * protocol's intervention takes effect, reported beside its transfer outcome.
 *
 * - Response diversity: "the mean pairwise token-set Jaccard distance across the retained
 *   responses per question" — per question, the mean over all unordered pairs of its responses
 *   of 1 − |A ∩ B| / |A ∪ B|; then the mean over questions.
 * - Correctness noise: "the final-answer mismatch rate in the pool" — wrong / judged responses.
 * - Rewrite share: "the fraction of wrong → check → fix traces in the pool".
 */
import type { PoolResponse } from '../../../schemas/study-report.js';

/**
 * The token set of a text: lowercased, split on every run of characters that are not Unicode
 * letters or digits, empty pieces dropped. `"x² = 4, so X=2"` → {x, 4, so, 2}.
 */
export function tokenSet(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((t) => t.length > 0),
  );
}

/** 1 − |A ∩ B| / |A ∪ B|; two empty sets are identical (distance 0). */
export function jaccardDistance(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let intersection = 0;
  for (const t of small) if (large.has(t)) intersection++;
  const union = a.size + b.size - intersection;
  return union === 0 ? 0 : 1 - intersection / union;
}

/** Distance between two sorted arrays of distinct token ids (a merge, for many pairs). */
function sortedJaccardDistance(a: Int32Array, b: Int32Array): number {
  let i = 0;
  let j = 0;
  let intersection = 0;
  while (i < a.length && j < b.length) {
    if (a[i]! === b[j]!) {
      intersection++;
      i++;
      j++;
    } else if (a[i]! < b[j]!) i++;
    else j++;
  }
  const union = a.length + b.length - intersection;
  return union === 0 ? 0 : 1 - intersection / union;
}

/** Mean pairwise distance among the texts of one question; null with fewer than 2 texts. */
export function questionJaccardDistance(texts: readonly string[]): number | null {
  if (texts.length < 2) return null;
  const ids = new Map<string, number>();
  const sets = texts.map((text) => {
    const tokens = [...tokenSet(text)].map((t) => {
      let id = ids.get(t);
      if (id === undefined) ids.set(t, (id = ids.size));
      return id;
    });
    return Int32Array.from(tokens).sort();
  });
  let total = 0;
  let pairs = 0;
  for (let i = 0; i < sets.length; i++)
    for (let j = i + 1; j < sets.length; j++) {
      total += sortedJaccardDistance(sets[i]!, sets[j]!);
      pairs++;
    }
  return total / pairs;
}

/** Response diversity of a pool. */
export interface PoolDiversity {
  /** Mean over questions of their mean pairwise distance; null when no question has 2 responses. */
  readonly value: number | null;
  /** Questions that entered the mean (≥ 2 responses). */
  readonly questions: number;
  /** Questions left out because they have a single response (no pair to compare). */
  readonly singletons: number;
}

/**
 * Mean pairwise token-set Jaccard distance of a pool: per question across its responses, then
 * the unweighted mean over questions. A question with one response has no pair and is left out
 * (counted in `singletons`), never scored as 0.
 */
export function meanPairwiseJaccardDistance(
  responses: readonly Pick<PoolResponse, 'questionId' | 'text'>[],
): PoolDiversity {
  const byQuestion = new Map<string, string[]>();
  for (const { questionId, text } of responses) {
    const list = byQuestion.get(questionId);
    if (list) list.push(text);
    else byQuestion.set(questionId, [text]);
  }
  let sum = 0;
  let questions = 0;
  let singletons = 0;
  for (const texts of byQuestion.values()) {
    const d = questionJaccardDistance(texts);
    if (d === null) singletons++;
    else {
      sum += d;
      questions++;
    }
  }
  return { value: questions ? sum / questions : null, questions, singletons };
}

/** Correctness noise of a pool. */
export interface CorrectnessNoise {
  /** wrong / judged; null when no response was judged. */
  readonly rate: number | null;
  readonly wrong: number;
  readonly judged: number;
  /** Responses without a verdict (`correct: null`), left out of the rate. */
  readonly unjudged: number;
}

/**
 * Share of admitted training responses whose final answer is wrong (the pool's final-answer
 * mismatch rate), pooled over all responses. Unjudged responses are left out of the denominator.
 */
export function correctnessNoise(responses: readonly Pick<PoolResponse, 'correct'>[]): CorrectnessNoise {
  let wrong = 0;
  let judged = 0;
  for (const { correct } of responses) {
    if (correct === null) continue;
    judged++;
    if (!correct) wrong++;
  }
  return { rate: judged ? wrong / judged : null, wrong, judged, unjudged: responses.length - judged };
}

/** Rewrite share of a pool. */
export interface RewriteShare {
  /** rewrites / total; null for an empty pool. */
  readonly share: number | null;
  readonly rewrites: number;
  readonly total: number;
}

/** Share of wrong → check → fix rewrite traces among all responses of the pool. */
export function rewriteShare(responses: readonly Pick<PoolResponse, 'rewrite'>[]): RewriteShare {
  const rewrites = responses.filter((r) => r.rewrite).length;
  return { share: responses.length ? rewrites / responses.length : null, rewrites, total: responses.length };
}

/** All three intrinsic metrics of one pool. */
export interface IntrinsicMetrics {
  readonly diversity: PoolDiversity;
  readonly noise: CorrectnessNoise;
  readonly rewrite: RewriteShare;
}

/** The three intrinsic metrics of one SFT pool (§7.1). */
export function intrinsicMetrics(pool: readonly PoolResponse[]): IntrinsicMetrics {
  return {
    diversity: meanPairwiseJaccardDistance(pool),
    noise: correctnessNoise(pool),
    rewrite: rewriteShare(pool),
  };
}
