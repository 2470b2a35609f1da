/**
 * Small descriptive statistics shared by the analysis: per-budget means over training seeds
 * (the seed's §4: n = 3 training seeds per cell, reported as mean ± std).
 */
import { AnalysisInputError } from '../errors.js';

/** One measured point of a curve: response budget r and a score as a fraction in [0, 1]. */
export interface CurvePoint {
  /** Per-question response budget r (> 0). */
  readonly r: number;
  /** Score as a fraction in [0, 1] (mean@k of one run, or a mean over runs). */
  readonly score: number;
}

/** The runs of one budget summarized: mean, sample std and how many runs. */
export interface BudgetSummary {
  readonly r: number;
  /** Mean score over the runs at this r (fraction). */
  readonly mean: number;
  /** Sample (n − 1) standard deviation over the runs (fraction); null for a single run. */
  readonly std: number | null;
  /** Number of runs (training seeds) at this r. */
  readonly n: number;
}

/** Arithmetic mean; throws on an empty list. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) throw new AnalysisInputError('mean', 'no values');
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

/**
 * Sample (Bessel-corrected, n − 1) standard deviation, as reported for the seed's
 * mean ± std over n = 3 training seeds; null when fewer than 2 values (no spread to report).
 */
export function sampleStd(values: readonly number[]): number | null {
  if (values.length < 2) return null;
  const m = mean(values);
  return Math.sqrt(values.reduce((sum, v) => sum + (v - m) ** 2, 0) / (values.length - 1));
}

/** Checks that every point has a finite r > 0 and a finite score; `analysis` names the caller. */
export function checkPoints(analysis: string, points: readonly CurvePoint[]): void {
  points.forEach((p, i) => {
    if (!(Number.isFinite(p.r) && p.r > 0))
      throw new AnalysisInputError(analysis, `point ${i} has r = ${p.r}; r must be a finite number > 0`);
    if (!Number.isFinite(p.score))
      throw new AnalysisInputError(analysis, `point ${i} (r = ${p.r}) has a non-finite score ${p.score}`);
  });
}

/** Groups points by r and summarizes each budget (mean, sample std, n), sorted by ascending r. */
export function summarizeByBudget(points: readonly CurvePoint[]): BudgetSummary[] {
  checkPoints('summarizeByBudget', points);
  const byR = new Map<number, number[]>();
  for (const p of points) {
    const list = byR.get(p.r);
    if (list) list.push(p.score);
    else byR.set(p.r, [p.score]);
  }
  return [...byR.entries()]
    .sort(([a], [b]) => a - b)
    .map(([r, scores]) => ({ r, mean: mean(scores), std: sampleStd(scores), n: scores.length }));
}

/** One point per budget: the mean score over the runs at that r, sorted by ascending r. */
export function meanCurve(points: readonly CurvePoint[]): CurvePoint[] {
  return summarizeByBudget(points).map(({ r, mean: score }) => ({ r, score }));
}
