import { describe, expect, it } from 'vitest';
import {
  aggregateGap,
  correctnessNoise,
  intrinsicMetrics,
  jaccardDistance,
  meanPairwiseJaccardDistance,
  questionJaccardDistance,
  rewriteShare,
  sweepMeanGap,
  tokenSet,
} from '../../../activities/study/analysis/index.js';

describe('token-set Jaccard distance', () => {
  it('tokenizes by lowercasing and splitting on non-alphanumerics', () => {
    expect(tokenSet('The cat, the HAT!  x=2; x²')).toEqual(new Set(['the', 'cat', 'hat', 'x', '2', 'x²']));
    expect(tokenSet('  ...  ')).toEqual(new Set());
    expect(tokenSet('Énergie: ΔE = 3')).toEqual(new Set(['énergie', 'δe', '3']));
  });

  it('is 1 − |A ∩ B| / |A ∪ B| on hand cases', () => {
    const s = (...t: string[]) => new Set(t);
    expect(jaccardDistance(s('a', 'b', 'c'), s('b', 'c', 'd'))).toBeCloseTo(0.5, 15);
    expect(jaccardDistance(s('a', 'b'), s('a', 'b'))).toBe(0);
    expect(jaccardDistance(s('a'), s('b'))).toBe(1);
    expect(jaccardDistance(s(), s())).toBe(0);
    expect(jaccardDistance(s(), s('a'))).toBe(1);
    expect(jaccardDistance(s('a', 'b', 'c', 'd'), s('a'))).toBeCloseTo(0.75, 15);
  });

  it('ignores case, punctuation and repeated tokens', () => {
    expect(questionJaccardDistance(['Answer: 42.', 'answer 42 answer'])).toBe(0);
  });

  it('averages over pairs within a question, then over questions, leaving singletons out', () => {
    const pool = [
      // q1: pairs (1,2) = 0.5, (1,3) = 0, (2,3) = 0.5 → 1/3.
      { questionId: 'q1', text: 'a b c' },
      { questionId: 'q1', text: 'b c d' },
      { questionId: 'q2', text: 'x y' },
      { questionId: 'q1', text: 'A, B, C' },
      // q2: one pair, disjoint → 1.
      { questionId: 'q2', text: 'z' },
      { questionId: 'q3', text: 'solo' },
    ];
    const d = meanPairwiseJaccardDistance(pool);
    // Per question then averaged: (1/3 + 1) / 2 = 2/3 (pooling all 4 pairs would give 0.5).
    expect(d.value).toBeCloseTo(2 / 3, 15);
    expect(d.questions).toBe(2);
    expect(d.singletons).toBe(1);
    expect(meanPairwiseJaccardDistance([{ questionId: 'q', text: 'only' }]).value).toBeNull();
  });
});

describe('correctness noise and rewrite share', () => {
  it('is the share of judged responses with a wrong final answer', () => {
    const n = correctnessNoise([
      { correct: true },
      { correct: false },
      { correct: false },
      { correct: null },
      { correct: true },
    ]);
    expect(n).toEqual({ rate: 0.5, wrong: 2, judged: 4, unjudged: 1 });
    expect(correctnessNoise([]).rate).toBeNull();
    expect(correctnessNoise([{ correct: null }]).rate).toBeNull();
  });

  it('is the share of wrong → check → fix traces in the pool', () => {
    expect(
      rewriteShare([{ rewrite: true }, { rewrite: false }, { rewrite: false }, { rewrite: false }]),
    ).toEqual({
      share: 0.25,
      rewrites: 1,
      total: 4,
    });
    expect(rewriteShare([]).share).toBeNull();
  });

  it('computes all three from one pool', () => {
    const m = intrinsicMetrics([
      { questionId: 'q', text: 'a b', correct: true, rewrite: false },
      { questionId: 'q', text: 'a c', correct: false, rewrite: true },
    ]);
    expect(m.diversity.value).toBeCloseTo(2 / 3, 15);
    expect(m.noise.rate).toBe(0.5);
    expect(m.rewrite.share).toBe(0.5);
  });
});

describe('sweep-mean gap to RS', () => {
  it('averages the per-budget gaps (means over seeds) over the budgets both curves have, in pp', () => {
    const rs = [
      { r: 1, score: 0.4 },
      { r: 1, score: 0.42 },
      { r: 2, score: 0.5 },
      { r: 4, score: 0.55 },
      { r: 8, score: 0.6 },
    ];
    const protocol = [
      { r: 1, score: 0.43 },
      { r: 2, score: 0.48 },
      { r: 2, score: 0.5 },
      { r: 4, score: 0.56 },
      { r: 16, score: 0.9 },
    ];
    // r = 1: 43 − 41 = +2; r = 2: 49 − 50 = −1; r = 4: 56 − 55 = +1 → mean 2/3 pp.
    const gap = sweepMeanGap(protocol, rs)!;
    expect(gap.perBudget.map((g) => g.r)).toEqual([1, 2, 4]);
    expect(gap.perBudget[0]!.gapPp).toBeCloseTo(2, 10);
    expect(gap.perBudget[1]!.gapPp).toBeCloseTo(-1, 10);
    expect(gap.gapPp).toBeCloseTo(2 / 3, 10);
    expect(sweepMeanGap([{ r: 32, score: 0.5 }], rs)).toBeNull();
  });

  it('compares against the reference at 4·r for the matched-budget reading of question synthesis', () => {
    const rs = [1, 2, 4, 8, 16, 32].map((r) => ({ r, score: 0.4 + 0.01 * Math.log2(r) }));
    const synthesized = [1, 2, 4, 8].map((r) => ({ r, score: 0.425 }));
    // Fixed r: 42.5 − (40, 41, 42, 43) → mean +1.0; matched budget: 42.5 − (42, 43, 44, 45) → −1.0.
    expect(sweepMeanGap(synthesized, rs)!.gapPp).toBeCloseTo(1, 10);
    const matched = sweepMeanGap(synthesized, rs, 4)!;
    expect(matched.perBudget.map((g) => g.r)).toEqual([1, 2, 4, 8]);
    expect(matched.gapPp).toBeCloseTo(-1, 10);
  });

  it('pools all method–budget points for the aggregate', () => {
    const a = { gapPp: 1, perBudget: [{ r: 1, gapPp: 1 }] };
    const b = {
      gapPp: -1,
      perBudget: [
        { r: 1, gapPp: -2 },
        { r: 2, gapPp: 0 },
        { r: 4, gapPp: -1 },
      ],
    };
    // Points 1, −2, 0, −1 → −0.5 (the mean of the sweep means would be 0).
    expect(aggregateGap([a, b])).toEqual({ gapPp: -0.5, points: 4 });
  });
});
