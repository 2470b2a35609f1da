import { describe, expect, it } from 'vitest';
import {
  AnalysisInputError,
  FIT_BOUNDS,
  fitScalingLaw,
  predictScalingLaw,
  solveBoundedLinear,
  type CurvePoint,
  type ScalingLawParams,
} from '../../../activities/study/analysis/index.js';
import { gaussian, uniform } from './noise.js';

const SEED_GRID = [1, 2, 4, 8, 16, 32];
const WIDE_GRID = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

const curve = (truth: ScalingLawParams, grid: readonly number[], sigma = 0, seed = 1): CurvePoint[] => {
  const noise = gaussian(seed);
  return grid.map((r) => ({ r, score: predictScalingLaw(truth, r) + sigma * noise() }));
};
const sse = (points: readonly CurvePoint[], p: ScalingLawParams) =>
  points.reduce((s, { r, score }) => s + (score - predictScalingLaw(p, r)) ** 2, 0);

/**
 * An independent search of the feasible set (no use of the fit's linear solve): a dense grid over
 * (P∞, A, α) within the bounds, then a bounded pattern search from the best grid point. Every
 * point it visits is feasible, so the fit's residual can never be above what it finds.
 */
function bruteForceFeasibleSse(points: readonly CurvePoint[]): number {
  let best: ScalingLawParams = { pInf: 0, a: 0, alpha: FIT_BOUNDS.alphaMin };
  let value = sse(points, best);
  for (let i = 0; i < 40; i++) {
    const alpha = 0.02 * 1000 ** (i / 39); // 0.02 … 20
    for (let j = 0; j <= 50; j++)
      for (let k = 0; k <= 50; k++) {
        const p = { pInf: j / 50, a: (1.5 * k) / 50, alpha };
        const v = sse(points, p);
        if (v < value) [best, value] = [p, v];
      }
  }
  let step = 0.02;
  for (let iteration = 0; iteration < 20_000 && step > 1e-9; iteration++) {
    let improved = false;
    for (const key of ['pInf', 'a', 'alpha'] as const)
      for (const sign of [1, -1]) {
        const q = { ...best, [key]: best[key] + sign * step * (key === 'alpha' ? best.alpha : 1) };
        if (q.pInf > 1 || q.a < 0 || q.alpha < FIT_BOUNDS.alphaMin) continue;
        const v = sse(points, q);
        if (v < value) [best, value, improved] = [q, v, true];
      }
    if (!improved) step /= 2;
  }
  return value;
}

describe('fitScalingLaw: P(r) = P∞ − A·r^−α under P∞ ≤ 1, A ≥ 0, α ≥ 0.02', () => {
  it('recovers the parameters of noiseless curves to 1e-6', () => {
    for (const truth of [
      { pInf: 0.62, a: 0.25, alpha: 0.5 },
      { pInf: 0.8, a: 0.4, alpha: 0.3 },
      { pInf: 0.45, a: 0.1, alpha: 1.5 },
      { pInf: 0.95, a: 0.6, alpha: 0.05 },
    ]) {
      const fit = fitScalingLaw(curve(truth, SEED_GRID));
      expect(fit.params.pInf).toBeCloseTo(truth.pInf, 6);
      expect(fit.params.a).toBeCloseTo(truth.a, 6);
      expect(fit.params.alpha).toBeCloseTo(truth.alpha, 6);
      expect(fit.maePp).toBeLessThan(1e-6);
      expect(fit.atBound).toEqual({ pInf: false, a: false, alpha: null });
    }
  });

  it('recovers known parameters from noisy curves (σ = 0.2 pp, r = 1…1024, 50 noise seeds each)', () => {
    // Tolerances: |ΔP∞| ≤ 0.015, |ΔA| ≤ 0.015, |Δα| ≤ 0.2·α. Observed maxima over 200 seeds:
    // 0.012, 0.010 and 0.15·α (α = 1), 0.07·α (α = 0.3 and 0.5).
    for (const truth of [
      { pInf: 0.62, a: 0.25, alpha: 0.5 },
      { pInf: 0.8, a: 0.4, alpha: 0.3 },
      { pInf: 0.45, a: 0.1, alpha: 1 },
    ]) {
      for (let seed = 1; seed <= 50; seed++) {
        const { params } = fitScalingLaw(curve(truth, WIDE_GRID, 0.002, seed));
        expect(Math.abs(params.pInf - truth.pInf)).toBeLessThanOrEqual(0.015);
        expect(Math.abs(params.a - truth.a)).toBeLessThanOrEqual(0.015);
        expect(Math.abs(params.alpha - truth.alpha)).toBeLessThanOrEqual(0.2 * truth.alpha);
      }
    }
  });

  it("fits the seed's six-budget grid at least as well as the truth, with in-sample MAE under the noise", () => {
    const truth = { pInf: 0.62, a: 0.25, alpha: 0.5 };
    for (let seed = 1; seed <= 30; seed++) {
      const points = curve(truth, SEED_GRID, 0.002, seed);
      const fit = fitScalingLaw(points);
      expect(fit.sse).toBeLessThanOrEqual(sse(points, truth) + 1e-15);
      expect(fit.sse).toBeCloseTo(sse(points, fit.params), 15);
      // Three free parameters on six points: the fit absorbs noise, MAE stays below 0.3 pp.
      expect(fit.maePp).toBeLessThan(0.3);
      expect(Math.abs(fit.params.pInf - truth.pInf)).toBeLessThanOrEqual(0.05);
    }
  });

  it('averages the runs of a budget and reports in-sample MAE in percentage points', () => {
    const truth = { pInf: 0.6, a: 0.2, alpha: 0.7 };
    const points = SEED_GRID.flatMap((r) =>
      [-0.01, 0, 0.01].map((offset) => ({ r, score: predictScalingLaw(truth, r) + offset })),
    );
    const fit = fitScalingLaw(points);
    expect(fit.predictions.map((p) => p.r)).toEqual(SEED_GRID);
    expect(fit.params.pInf).toBeCloseTo(0.6, 6);
    expect(fit.predictions[0]!.observed).toBeCloseTo(0.4, 12);
    const handMae = (100 * fit.predictions.reduce((s, p) => s + Math.abs(p.observed - p.predicted), 0)) / 6;
    expect(fit.maePp).toBeCloseTo(handMae, 12);
  });

  it('holds P∞ at 1 when the data want a ceiling above 1, and only then', () => {
    const points = curve({ pInf: 1.5, a: 1.0, alpha: 0.2 }, SEED_GRID);
    const fit = fitScalingLaw(points);
    expect(fit.params.pInf).toBe(1);
    expect(fit.atBound.pInf).toBe(true);
    expect(fit.params.a).toBeGreaterThan(0);
    // The bound binds: raising P∞ (past 1) would lower the residual.
    const dSseDpInf = (sse(points, { ...fit.params, pInf: 1 + 1e-6 }) - fit.sse) / 1e-6;
    expect(dSseDpInf).toBeLessThan(0);
    expect(fit.sse).toBeLessThanOrEqual(bruteForceFeasibleSse(points) + 1e-9);
  });

  it('holds A at 0 for a decreasing curve (data that want A < 0) and fits the mean', () => {
    const points = SEED_GRID.map((r) => ({ r, score: 0.5 + 0.1 * r ** -0.5 }));
    const fit = fitScalingLaw(points);
    expect(fit.params.a).toBe(0);
    expect(fit.atBound.a).toBe(true);
    const meanScore = points.reduce((s, p) => s + p.score, 0) / points.length;
    expect(fit.params.pInf).toBeCloseTo(meanScore, 12);
    expect(fit.predictions.every((p) => p.predicted === fit.params.pInf)).toBe(true);
  });

  it('holds α at 0.02 when the data want a slower decay', () => {
    for (const points of [
      curve({ pInf: 0.7, a: 0.5, alpha: 0.01 }, SEED_GRID),
      SEED_GRID.map((r) => ({ r, score: 0.4 + 0.003 * Math.log(r) })),
    ]) {
      const fit = fitScalingLaw(points);
      expect(fit.params.alpha).toBe(FIT_BOUNDS.alphaMin);
      expect(fit.atBound.alpha).toBe('min');
      expect(fit.sse).toBeLessThanOrEqual(bruteForceFeasibleSse(points) + 1e-9);
    }
  });

  it('reports the α search cap when the data saturate right after the smallest budget', () => {
    // No upper bound on α in the seed: the best fit is the α → ∞ step, P∞ − A at r = 1, P∞ above.
    const points = SEED_GRID.map((r) => ({ r, score: r === 1 ? 0.3 : 0.6 }));
    const fit = fitScalingLaw(points);
    expect(fit.atBound.alpha).toBe('searchMax');
    expect(fit.params.pInf).toBeCloseTo(0.6, 12);
    expect(fit.params.a).toBeCloseTo(0.3, 12);
    expect(fit.maePp).toBeLessThan(1e-10);
  });

  it('never leaves the bounds and is never beaten by a brute-force feasible search on random curves', () => {
    const next = uniform(99);
    for (let k = 0; k < 12; k++) {
      const points = SEED_GRID.map((r) => ({ r, score: Math.min(1, Math.max(0, 0.3 + 0.6 * next())) }));
      const fit = fitScalingLaw(points);
      expect(fit.params.pInf).toBeLessThanOrEqual(1);
      expect(fit.params.a).toBeGreaterThanOrEqual(0);
      expect(fit.params.alpha).toBeGreaterThanOrEqual(0.02);
      expect(fit.sse).toBeLessThanOrEqual(bruteForceFeasibleSse(points) + 1e-9);
    }
  });

  it('solves the bounded two-parameter problem exactly for a fixed α', () => {
    // Unconstrained feasible: y = 0.9 − 0.4x exactly.
    const xs = [1, 0.5, 0.25, 0.125];
    expect(
      solveBoundedLinear(
        xs,
        xs.map((x) => 0.9 - 0.4 * x),
      ),
    ).toMatchObject({ pInf: 0.9, a: 0.4 });
    // Wants P∞ = 1.2 > 1: on P∞ = 1, A = Σx(1 − y)/Σx² by hand.
    const ys = xs.map((x) => 1.2 - 0.8 * x);
    const aHand = xs.reduce((s, x, i) => s + x * (1 - ys[i]!), 0) / xs.reduce((s, x) => s + x * x, 0);
    const onCeiling = solveBoundedLinear(xs, ys);
    expect(onCeiling.pInf).toBe(1);
    expect(onCeiling.a).toBeCloseTo(aHand, 12);
  });

  it('refuses fewer than three budgets and non-finite scores', () => {
    expect(() =>
      fitScalingLaw([
        { r: 1, score: 0.3 },
        { r: 2, score: 0.4 },
        { r: 2, score: 0.41 },
      ]),
    ).toThrow(AnalysisInputError);
    expect(() =>
      fitScalingLaw([
        { r: 1, score: 0.3 },
        { r: 2, score: NaN },
        { r: 4, score: 0.5 },
      ]),
    ).toThrow(/non-finite/);
    expect(() =>
      fitScalingLaw([
        { r: 0, score: 0.3 },
        { r: 2, score: 0.4 },
        { r: 4, score: 0.5 },
      ]),
    ).toThrow(/r must/);
  });
});
