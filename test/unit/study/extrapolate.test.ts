import { describe, expect, it } from 'vitest';
import {
  AnalysisInputError,
  carryForecast,
  fitScalingLaw,
  heldOutForecast,
  logLinForecast,
  pooledForecastMae,
  predictScalingLaw,
} from '../../../activities/study/analysis/index.js';
import { gaussian } from './noise.js';

// r = 1…16 scores 0.40, 0.50, 0.55, 0.62, 0.64; observed at r = 32: 0.66.
const TRAIN = [
  { r: 1, score: 0.4 },
  { r: 2, score: 0.5 },
  { r: 4, score: 0.55 },
  { r: 8, score: 0.62 },
  { r: 16, score: 0.64 },
];
const CURVE = [...TRAIN, { r: 32, score: 0.66 }];

describe('held-out forecast of r = 32 from r ≤ 16', () => {
  it('Carry extends the r = 16 measurement: 0.64, error 2 pp', () => {
    const f = heldOutForecast(CURVE);
    expect(f.carry.prediction).toBe(0.64);
    expect(f.carry.fromR).toBe(16);
    expect(f.carry.absErrorPp).toBeCloseTo(2, 10);
  });

  it('LogLin is the least-squares line in log r over all of r ≤ 16 (hand computation)', () => {
    // With k = log2 r = 0…4: mean k = 2, mean y = 0.542, Sxx = 10, Sxy = 0.6 → slope 0.06 per
    // doubling, intercept 0.422, forecast at k = 5: 0.722, error |0.66 − 0.722| = 6.2 pp.
    const f = heldOutForecast(CURVE);
    expect(f.logLin.prediction).toBeCloseTo(0.722, 12);
    expect(f.logLin.slope).toBeCloseTo(0.06 / Math.LN2, 12);
    expect(f.logLin.intercept).toBeCloseTo(0.422, 12);
    expect(f.logLin.absErrorPp).toBeCloseTo(6.2, 10);
    // A line through the last two points only would give 0.66: not the seed's LogLin.
    expect(f.logLin.prediction).not.toBeCloseTo(0.66, 3);
  });

  it('Fit forecasts with the law fit on r ≤ 16 only', () => {
    const f = heldOutForecast(CURVE);
    const trainFit = fitScalingLaw(TRAIN);
    expect(f.fit.params).toEqual(trainFit.params);
    expect(f.fit.prediction).toBeCloseTo(predictScalingLaw(trainFit.params, 32), 15);
    expect(f.fit.absErrorPp).toBeCloseTo(100 * Math.abs(0.66 - f.fit.prediction), 12);
    expect(f.train.map((p) => p.r)).toEqual([1, 2, 4, 8, 16]);
  });

  it('averages the runs of a budget and ignores budgets between 16 and 32', () => {
    const seeds = CURVE.flatMap((p) => [
      { r: p.r, score: p.score - 0.01 },
      { r: p.r, score: p.score + 0.01 },
    ]);
    const f = heldOutForecast([...seeds, { r: 24, score: 0.1 }]);
    expect(f.observed).toBeCloseTo(0.66, 12);
    expect(f.carry.prediction).toBeCloseTo(0.64, 12);
    expect(f.logLin.prediction).toBeCloseTo(0.722, 12);
    expect(carryForecast(seeds, 16)).toBeCloseTo(0.64, 12);
    expect(logLinForecast(TRAIN, 32).prediction).toBeCloseTo(0.722, 12);
  });

  it('forecasts a noisy saturating law better than Carry and LogLin (seeded, σ = 0.2 pp)', () => {
    const truth = { pInf: 0.62, a: 0.25, alpha: 0.5 };
    const forecasts = Array.from({ length: 30 }, (_, seed) => {
      const noise = gaussian(1000 + seed);
      return heldOutForecast(
        [1, 2, 4, 8, 16, 32].map((r) => ({ r, score: predictScalingLaw(truth, r) + 0.002 * noise() })),
      );
    });
    const pooled = pooledForecastMae(forecasts);
    expect(pooled.cells).toBe(30);
    // Observed: Fit 0.28 pp, Carry 1.8 pp, LogLin 4.3 pp; the worst Fit error 0.9 pp.
    expect(pooled.fitPp).toBeLessThan(0.5);
    expect(pooled.fitPp).toBeLessThan(pooled.carryPp);
    expect(pooled.fitPp).toBeLessThan(pooled.logLinPp);
    expect(Math.max(...forecasts.map((f) => f.fit.absErrorPp))).toBeLessThan(1.5);
  });

  it('refuses a curve without the held-out point or without r = 16', () => {
    expect(() => heldOutForecast(TRAIN)).toThrow(AnalysisInputError);
    expect(() => heldOutForecast(CURVE.filter((p) => p.r !== 16))).toThrow(/r = 16/);
    expect(() => heldOutForecast(CURVE, { trainMaxR: 32, targetR: 16 })).toThrow(/must exceed/);
  });
});
