import { describe, expect, it } from 'vitest';
import {
  AnalysisInputError,
  bucketCells,
  bucketOf,
  exampleCount,
  MATCHED_BUDGETS,
  matchedBudgetCells,
  nestedSubsets,
  RESPONSE_BUDGETS,
  subsetFor,
  subsetSize,
  trainingPrefix,
} from '../../../activities/study/analysis/index.js';

const pool = (n: number) => Array.from({ length: n }, (_, i) => `q-${String(i).padStart(4, '0')}`);
const isSubset = (a: readonly string[], b: readonly string[]) => a.every((id) => new Set(b).has(id));

describe('nested random subsets Q1 ⊂ Q2 ⊂ Q4', () => {
  it('hold ⌊n/4⌋, ⌊n/2⌋ and n questions', () => {
    for (const [n, q1, q2] of [
      [100, 25, 50],
      [10, 2, 5],
      [7, 1, 3],
      [4, 1, 2],
    ] as const) {
      const s = nestedSubsets(pool(n), 3);
      expect([s.q1.length, s.q2.length, s.q4.length]).toEqual([q1, q2, n]);
      expect([subsetSize(n, 1), subsetSize(n, 2), subsetSize(n, 4)]).toEqual([q1, q2, n]);
    }
  });

  it('are nested for every seed and pool size', () => {
    for (const n of [4, 5, 9, 40, 333])
      for (let seed = 0; seed < 25; seed++) {
        const s = nestedSubsets(pool(n), seed);
        expect(isSubset(s.q1, s.q2)).toBe(true);
        expect(isSubset(s.q2, s.q4)).toBe(true);
        expect(new Set(s.q2).size).toBe(s.q2.length);
        expect(s.q4).toEqual(pool(n));
      }
  });

  it('are the same for the same seed, whatever the order of the pool, and differ across seeds', () => {
    const ids = pool(200);
    const a = nestedSubsets(ids, 42);
    expect(nestedSubsets(ids, 42)).toEqual(a);
    const reversed = nestedSubsets([...ids].reverse(), 42);
    expect([...reversed.q1].sort()).toEqual([...a.q1].sort());
    expect([...reversed.q2].sort()).toEqual([...a.q2].sort());
    expect(nestedSubsets(ids, 43).q1).not.toEqual(a.q1);
    // Kept in the pool's order.
    expect(a.q2).toEqual(ids.filter((id) => a.q2.includes(id)));
    expect(subsetFor(a, 1)).toBe(a.q1);
    expect(subsetFor(a, 4)).toBe(a.q4);
  });

  it('draw every question into Q1 with probability about 1/4 over seeds (not a fixed prefix)', () => {
    const ids = pool(8);
    const counts = new Map(ids.map((id) => [id, 0]));
    const seeds = 4000;
    for (let seed = 0; seed < seeds; seed++)
      for (const id of nestedSubsets(ids, seed).q1) counts.set(id, counts.get(id)! + 1);
    // Binomial(4000, 0.25): sd ≈ 27, so ±0.04·4000 = 160 is about 6 sd.
    for (const c of counts.values()) expect(Math.abs(c / seeds - 0.25)).toBeLessThan(0.04);
  });

  it('refuse duplicate ids, pools under 4 questions and bad seeds', () => {
    expect(() => nestedSubsets(['a', 'b', 'a', 'c'], 1)).toThrow(/listed twice/);
    expect(() => nestedSubsets(['a', 'b', 'c'], 1)).toThrow(AnalysisInputError);
    expect(() => nestedSubsets(pool(8), -1)).toThrow(/seed/);
    expect(() => nestedSubsets(pool(8), 1.5)).toThrow(/seed/);
  });
});

describe('matched-budget buckets B = q·r', () => {
  it('collect (q = 4, r = B/4), (q = 2, r = B/2), (q = 1, r = B)', () => {
    expect(bucketCells(4)).toEqual([
      { q: 4, r: 1 },
      { q: 2, r: 2 },
      { q: 1, r: 4 },
    ]);
    expect(bucketCells(32)).toEqual([
      { q: 4, r: 8 },
      { q: 2, r: 16 },
      { q: 1, r: 32 },
    ]);
    for (const budget of MATCHED_BUDGETS)
      for (const cell of bucketCells(budget)) {
        expect(cell.q * cell.r).toBe(budget);
        expect(bucketOf(cell)).toBe(budget);
        expect(RESPONSE_BUDGETS).toContain(cell.r);
      }
  });

  it('leave out allocations whose product is not a bucket', () => {
    expect(bucketOf({ q: 4, r: 16 })).toBeNull();
    expect(bucketOf({ q: 1, r: 2 })).toBeNull();
    expect(bucketOf({ q: 1, r: 1 })).toBeNull();
    expect(bucketOf({ q: 2, r: 8 })).toBe(16);
    expect(() => bucketCells(64 as never)).toThrow(AnalysisInputError);
  });

  it('list the 12 allocations of the grid, and match the example count when 4 divides |Q4|', () => {
    const cells = matchedBudgetCells();
    expect(cells).toHaveLength(12);
    expect(new Set(cells.map(({ cell }) => `${cell.q}:${cell.r}`)).size).toBe(12);
    for (const budget of MATCHED_BUDGETS) {
      const counts = bucketCells(budget).map((cell) => exampleCount(100, cell));
      expect(counts).toEqual([25 * budget, 25 * budget, 25 * budget]);
    }
    // With |Q4| = 10 the floor makes the buckets differ: Q1 = 2, Q2 = 5, Q4 = 10 at B = 4.
    expect(bucketCells(4).map((cell) => exampleCount(10, cell))).toEqual([10, 10, 8]);
  });
});

describe('the prefix rule: the training set at r is the first r accepted responses', () => {
  const accepted = [
    { questionId: 'a', accepted: ['a1', 'a2', 'a3', 'a4', 'a5'] },
    { questionId: 'b', accepted: ['b1', 'b2'] },
  ];

  it('takes the first r in acceptance order and lists questions that could not fill r', () => {
    const at4 = trainingPrefix(accepted, 4);
    expect(at4.sets).toEqual([
      { questionId: 'a', responses: ['a1', 'a2', 'a3', 'a4'] },
      { questionId: 'b', responses: ['b1', 'b2'] },
    ]);
    expect(at4.short).toEqual([{ questionId: 'b', available: 2 }]);
    expect(trainingPrefix(accepted, 1).sets.map((s) => s.responses)).toEqual([['a1'], ['b1']]);
    expect(trainingPrefix(accepted, 2).short).toEqual([]);
  });

  it('is nested in r', () => {
    for (const [small, large] of [
      [1, 2],
      [2, 4],
      [4, 8],
    ] as const) {
      const s = trainingPrefix(accepted, small).sets;
      const l = trainingPrefix(accepted, large).sets;
      s.forEach((set, i) => expect(l[i]!.responses.slice(0, set.responses.length)).toEqual(set.responses));
    }
  });

  it('refuses r < 1 and duplicate questions', () => {
    expect(() => trainingPrefix(accepted, 0)).toThrow(AnalysisInputError);
    expect(() => trainingPrefix([...accepted, accepted[0]!], 2)).toThrow(/listed twice/);
  });
});
