/**
 * Budget allocation of the seed's study design:
 *
 * - §4 / App. 11.3 (prefix rule): RS samples until 32 correct responses per question; the
 *   training set at budget r ∈ {1, 2, 4, 8, 16, 32} is the first r accepted responses of each
 *   question, so the sets are nested in r.
 * - §6.1 (paradigm 1): nested random subsets Q1 ⊂ Q2 ⊂ Q4 of the full seed pool Q4 holding a
 *   quarter and a half of it, and matched-budget buckets B ≡ q·r ∈ {4, 8, 16, 32}, where bucket B
 *   collects (q = 4, r = B/4), (q = 2, r = B/2) and (q = 1, r = B).
 */
import { MATCHED_BUDGETS, type MatchedBudget } from '../../../schemas/study-report.js';
import { AnalysisInputError } from '../errors.js';
import { fmix32 } from '../../training/sampling.js';

// The buckets bound the report's input records, so they are defined with them in schemas/.
export { MATCHED_BUDGETS, type MatchedBudget };

/** The RS response budgets r of the seed's sweep (§4). */
export const RESPONSE_BUDGETS = [1, 2, 4, 8, 16, 32] as const;

/** Pool sizes in quarters of the full pool: Q1 (a quarter), Q2 (a half), Q4 (all). */
export const POOL_QUARTERS = [1, 2, 4] as const;
/** q of a pool Q_q. */
export type PoolQuarters = (typeof POOL_QUARTERS)[number];

/** One allocation (q, r): pool Q_q, r responses per question. */
export interface BudgetCell {
  readonly q: PoolQuarters;
  readonly r: number;
}

/**
 * |Q_q| for a pool of `poolSize` questions: ⌊q·|Q4|/4⌋, i.e. |Q1| = ⌊n/4⌋, |Q2| = ⌊n/2⌋,
 * |Q4| = n. The seed writes |Q_q| = (q/4)|Q4|; floor keeps each subset inside the next when n is
 * not a multiple of 4 (then matched buckets differ by fewer than q·r examples).
 */
export function subsetSize(poolSize: number, q: PoolQuarters): number {
  if (!(Number.isInteger(poolSize) && poolSize >= 0))
    throw new AnalysisInputError('subsetSize', `poolSize must be a non-negative integer, got ${poolSize}`);
  return Math.floor((q * poolSize) / 4);
}

/** The nested subsets of one pool; each list keeps the order of the pool that was given. */
export interface NestedSubsets {
  /** The seed they were drawn with. */
  readonly seed: number;
  /** Q1: ⌊n/4⌋ questions. */
  readonly q1: readonly string[];
  /** Q2: ⌊n/2⌋ questions, a superset of Q1. */
  readonly q2: readonly string[];
  /** Q4: the whole pool. */
  readonly q4: readonly string[];
}

/** A 32-bit hash of `text` under a 32-bit key (multiply–xorshift per UTF-16 unit, then fmix32). */
function hash32(text: string, key: number): number {
  let h = fmix32(key ^ 0x9e3779b9);
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 0x5bd1e995);
    h ^= h >>> 15;
  }
  return fmix32(h ^ text.length);
}

/**
 * The rank key of a question under `seed`: 53 bits from two independent 32-bit hashes of
 * (seed, id). Depends only on the seed and the id, so the subsets do not depend on the order in
 * which the pool is listed.
 */
export function rankKey(seed: number, questionId: string): number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4_294_967_296) >>> 0;
  const h1 = hash32(questionId, fmix32(lo ^ fmix32(hi ^ 0x51_31_00_01)));
  const h2 = hash32(questionId, fmix32(lo ^ fmix32(hi ^ 0x51_32_00_02)));
  return h1 * 2_097_152 + (h2 >>> 11);
}

/**
 * Nested random subsets Q1 ⊂ Q2 ⊂ Q4 of `questionIds` (§6.1): the pool is ranked by
 * {@link rankKey}(seed, id) (ties, vanishingly rare, by id), Q1 is the first ⌊n/4⌋ of the ranking
 * and Q2 the first ⌊n/2⌋, so nesting holds by construction and the same seed and ids always give
 * the same subsets. Needs at least 4 distinct ids (else Q1 is empty); `seed` is a non-negative safe
 * integer.
 */
export function nestedSubsets(questionIds: readonly string[], seed: number): NestedSubsets {
  if (!(Number.isSafeInteger(seed) && seed >= 0))
    throw new AnalysisInputError('nestedSubsets', `seed must be a non-negative safe integer, got ${seed}`);
  const seen = new Set<string>();
  for (const id of questionIds) {
    if (seen.has(id))
      throw new AnalysisInputError('nestedSubsets', `question id ${JSON.stringify(id)} is listed twice`);
    seen.add(id);
  }
  if (questionIds.length < 4)
    throw new AnalysisInputError(
      'nestedSubsets',
      `Q1 holds a quarter of the pool; need ≥ 4 questions, got ${questionIds.length}`,
    );
  const ranked = questionIds
    .map((id) => ({ id, key: rankKey(seed, id) }))
    .sort((a, b) => a.key - b.key || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rankOf = new Map(ranked.map(({ id }, i) => [id, i]));
  const firstN = (n: number) => questionIds.filter((id) => rankOf.get(id)! < n);
  return {
    seed,
    q1: firstN(subsetSize(questionIds.length, 1)),
    q2: firstN(subsetSize(questionIds.length, 2)),
    q4: [...questionIds],
  };
}

/** The pool Q_q of `subsets`. */
export function subsetFor(subsets: NestedSubsets, q: PoolQuarters): readonly string[] {
  switch (q) {
    case 1:
      return subsets.q1;
    case 2:
      return subsets.q2;
    case 4:
      return subsets.q4;
    default:
      throw new AnalysisInputError(
        'subsetFor',
        `q must be one of ${POOL_QUARTERS.join(', ')}, got ${q as number}`,
      );
  }
}

/** The three allocations of bucket B: (q = 4, r = B/4), (q = 2, r = B/2), (q = 1, r = B). */
export function bucketCells(budget: MatchedBudget): BudgetCell[] {
  if (!(MATCHED_BUDGETS as readonly number[]).includes(budget))
    throw new AnalysisInputError(
      'bucketCells',
      `B must be one of ${MATCHED_BUDGETS.join(', ')}, got ${budget}`,
    );
  return [
    { q: 4, r: budget / 4 },
    { q: 2, r: budget / 2 },
    { q: 1, r: budget },
  ];
}

/** The bucket B = q·r of an allocation, or null when q·r is not one of the seed's buckets. */
export function bucketOf(cell: BudgetCell): MatchedBudget | null {
  const product = cell.q * cell.r;
  return (MATCHED_BUDGETS as readonly number[]).includes(product) && Number.isInteger(cell.r)
    ? (product as MatchedBudget)
    : null;
}

/** Every allocation the matched-budget grid needs (12 cells), by bucket then descending q. */
export function matchedBudgetCells(): { budget: MatchedBudget; cell: BudgetCell }[] {
  return MATCHED_BUDGETS.flatMap((budget) => bucketCells(budget).map((cell) => ({ budget, cell })));
}

/** SFT examples of an allocation: |Q_q| · r (§6.1). */
export function exampleCount(poolSize: number, cell: BudgetCell): number {
  return subsetSize(poolSize, cell.q) * cell.r;
}

/** One question's accepted responses, in acceptance order (first accepted first). */
export interface AcceptedResponses<T> {
  readonly questionId: string;
  readonly accepted: readonly T[];
}

/** The training set at one budget r. */
export interface TrainingPrefix<T> {
  readonly r: number;
  /** Per question, its first min(r, accepted) responses, in the order given. */
  readonly sets: readonly { readonly questionId: string; readonly responses: readonly T[] }[];
  /** Questions with fewer than r accepted responses (they contribute what they have). */
  readonly short: readonly { readonly questionId: string; readonly available: number }[];
}

/**
 * The prefix rule (§4, App. 11.3): the training set at budget r is the first r accepted responses
 * of each question, so the set at r is contained in the set at any larger r. `accepted` must be in
 * acceptance order. A question RS could not fill to r (its sampling cap ran out first) keeps all
 * it has and is listed in `short`; the caller decides whether to drop it.
 */
export function trainingPrefix<T>(questions: readonly AcceptedResponses<T>[], r: number): TrainingPrefix<T> {
  if (!(Number.isInteger(r) && r >= 1))
    throw new AnalysisInputError('trainingPrefix', `r must be an integer ≥ 1, got ${r}`);
  const seen = new Set<string>();
  for (const { questionId } of questions) {
    if (seen.has(questionId))
      throw new AnalysisInputError(
        'trainingPrefix',
        `question id ${JSON.stringify(questionId)} is listed twice`,
      );
    seen.add(questionId);
  }
  return {
    r,
    sets: questions.map(({ questionId, accepted }) => ({ questionId, responses: accepted.slice(0, r) })),
    short: questions
      .filter(({ accepted }) => accepted.length < r)
      .map(({ questionId, accepted }) => ({ questionId, available: accepted.length })),
  };
}
