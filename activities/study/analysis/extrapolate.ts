/**
 * Held-out forecasting of the seed (§5.2; App. 11.2): fit on r ≤ 16, forecast r = 32, and compare
 * the scaling-law forecast with two trivial extrapolators:
 *
 * - Carry: "the r = 16 measurement extended unchanged to r = 32";
 * - LogLin: "a straight line in y vs log r fit on r ≤ 16 and extended to r = 32" (ordinary least
 *   squares over every training budget, not only the last two).
 *
 * The error of each is |P_obs(32) − P_pred(32)| in percentage points: seed eq. 4 with 𝓡 = {32}.
 */
import { AnalysisInputError } from '../errors.js';
import { fitScalingLaw, predictScalingLaw, type FitOptions, type ScalingLawParams } from './fit.js';
import { checkPoints, mean, meanCurve, type CurvePoint } from './stats.js';

/** The seed's held-out protocol: train on r ≤ 16, forecast r = 32. */
export const DEFAULT_FORECAST = { trainMaxR: 16, targetR: 32 } as const;

/** Options of {@link heldOutForecast}; defaults in brackets. */
export interface ForecastOptions {
  /** Largest training budget; Carry extends its measurement [16]. */
  readonly trainMaxR?: number;
  /** The held-out budget to forecast; must exceed `trainMaxR` [32]. */
  readonly targetR?: number;
  /** Options of the scaling-law fit on the training budgets. */
  readonly fit?: FitOptions;
}

/** One extrapolator's forecast at the held-out budget. */
export interface Forecast {
  /** Predicted score at the target r (fraction). */
  readonly prediction: number;
  /** |observed − prediction| in percentage points. */
  readonly absErrorPp: number;
}

/** The three forecasts of one curve at the held-out budget. */
export interface HeldOutForecast {
  readonly trainMaxR: number;
  readonly targetR: number;
  /** Observed score at the target r (mean over runs, fraction). */
  readonly observed: number;
  /** The per-budget means the extrapolators were fit on (r ≤ trainMaxR), ascending r. */
  readonly train: readonly CurvePoint[];
  /** The scaling law P∞ − A·r^−α fit on the training budgets. */
  readonly fit: Forecast & { readonly params: ScalingLawParams };
  /** Carry: the measurement at `trainMaxR`, unchanged. */
  readonly carry: Forecast & { readonly fromR: number };
  /** LogLin: y = intercept + slope · ln r, least squares over the training budgets. */
  readonly logLin: Forecast & { readonly intercept: number; readonly slope: number };
}

/** Carry: the (mean) measurement at `fromR`, extended unchanged. */
export function carryForecast(train: readonly CurvePoint[], fromR: number): number {
  const at = train.filter((p) => p.r === fromR).map((p) => p.score);
  if (at.length === 0)
    throw new AnalysisInputError('carryForecast', `no measurement at r = ${fromR} to carry`);
  return mean(at);
}

/**
 * LogLin: the ordinary-least-squares line y = intercept + slope · ln r through the training
 * points (budgets with several runs enter as their mean), evaluated at `targetR`. Needs at least 2
 * distinct r.
 */
export function logLinForecast(
  train: readonly CurvePoint[],
  targetR: number,
): { prediction: number; intercept: number; slope: number } {
  checkPoints('logLinForecast', train);
  const curve = meanCurve(train);
  if (curve.length < 2)
    throw new AnalysisInputError('logLinForecast', `a line needs at least 2 distinct r, got ${curve.length}`);
  const xs = curve.map((p) => Math.log(p.r));
  const ys = curve.map((p) => p.score);
  const xMean = mean(xs);
  const yMean = mean(ys);
  let sxx = 0;
  let sxy = 0;
  xs.forEach((x, i) => {
    sxx += (x - xMean) ** 2;
    sxy += (x - xMean) * (ys[i]! - yMean);
  });
  const slope = sxy / sxx;
  const intercept = yMean - slope * xMean;
  return { prediction: intercept + slope * Math.log(targetR), intercept, slope };
}

/**
 * The seed's held-out forecast of one curve (App. 11.2): fit the scaling law, Carry and LogLin on
 * the budgets r ≤ `trainMaxR` and score each against the observed mean at `targetR`. Points may
 * hold one entry per training seed; each budget enters as its mean. Budgets above `trainMaxR`
 * other than the target are ignored. Throws {@link AnalysisInputError} when the target or
 * `trainMaxR` was not measured or fewer than 3 training budgets exist.
 */
export function heldOutForecast(
  points: readonly CurvePoint[],
  options: ForecastOptions = {},
): HeldOutForecast {
  const trainMaxR = options.trainMaxR ?? DEFAULT_FORECAST.trainMaxR;
  const targetR = options.targetR ?? DEFAULT_FORECAST.targetR;
  if (!(targetR > trainMaxR))
    throw new AnalysisInputError(
      'heldOutForecast',
      `targetR (${targetR}) must exceed trainMaxR (${trainMaxR})`,
    );
  checkPoints('heldOutForecast', points);
  const curve = meanCurve(points);
  const target = curve.find((p) => p.r === targetR);
  if (!target)
    throw new AnalysisInputError('heldOutForecast', `no measurement at the held-out r = ${targetR}`);
  const train = curve.filter((p) => p.r <= trainMaxR);
  if (!train.some((p) => p.r === trainMaxR))
    throw new AnalysisInputError('heldOutForecast', `no measurement at r = ${trainMaxR} (Carry extends it)`);

  const errorPp = (prediction: number) => 100 * Math.abs(target.score - prediction);
  const fitted = fitScalingLaw(train, options.fit);
  const fitPrediction = predictScalingLaw(fitted.params, targetR);
  const carry = carryForecast(train, trainMaxR);
  const logLin = logLinForecast(train, targetR);
  return {
    trainMaxR,
    targetR,
    observed: target.score,
    train,
    fit: { prediction: fitPrediction, absErrorPp: errorPp(fitPrediction), params: fitted.params },
    carry: { prediction: carry, absErrorPp: errorPp(carry), fromR: trainMaxR },
    logLin: { ...logLin, absErrorPp: errorPp(logLin.prediction) },
  };
}

/** Held-out MAE in pp of each extrapolator pooled over cells (the seed's "pooled across the eight cells"). */
export interface PooledForecastMae {
  readonly cells: number;
  readonly fitPp: number;
  readonly carryPp: number;
  readonly logLinPp: number;
}

/** Mean of each extrapolator's absolute held-out error over `forecasts` (one per cell). */
export function pooledForecastMae(forecasts: readonly HeldOutForecast[]): PooledForecastMae {
  if (forecasts.length === 0) throw new AnalysisInputError('pooledForecastMae', 'no forecasts to pool');
  return {
    cells: forecasts.length,
    fitPp: mean(forecasts.map((f) => f.fit.absErrorPp)),
    carryPp: mean(forecasts.map((f) => f.carry.absErrorPp)),
    logLinPp: mean(forecasts.map((f) => f.logLin.absErrorPp)),
  };
}
