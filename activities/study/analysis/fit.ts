/**
 * The fixed-source response-scaling law of the seed (§5.1, eq. 3; App. 11.1):
 *
 *     P(r) = P∞ − A · r^−α
 *
 * fit by least squares under the seed's bounds (App. 11.2: "c ≤ 1, α ≥ 0.02, A ≥ 0", with c the
 * ceiling P∞). No numeric library is used: for a fixed α the model is linear in (P∞, A) with
 * x = r^−α, so the bounded two-parameter least squares is solved exactly (the unconstrained
 * solution when it is feasible, otherwise the best of the boundary cases P∞ = 1 and A = 0, which
 * is exact for this convex problem); the residual profile over α is then minimized on a fine
 * log-grid and refined by golden-section search around the best grid point.
 */
import { AnalysisInputError } from '../errors.js';
import { checkPoints, meanCurve, type CurvePoint } from './stats.js';

/** The seed's bounds on the fit (App. 11.2). The seed states no upper bound on α. */
export const FIT_BOUNDS = {
  /** P∞ ≤ 1: scores are fractions, the normalized ceiling is at most 1 (App. 11.1, eq. 5). */
  pInfMax: 1,
  /** α ≥ 0.02. */
  alphaMin: 0.02,
  /** A ≥ 0: the curve never decreases in r (App. 11.1, prediction (a)). */
  aMin: 0,
} as const;

/**
 * Default upper end of the α search. Not a bound of the seed (it states none) but where the
 * search stops: as α → ∞ the curve tends to a step (P∞ − A at the smallest r, P∞ above it), and
 * at α = 64 every r ≥ 2·r_min already has r^−α < 2^−64 ≈ 5e−20, so the residual equals that
 * limit to double precision. A fit that ends here reports `atBound.alpha = 'searchMax'`: the data
 * saturate after the first budget and α is not identified.
 */
export const DEFAULT_ALPHA_SEARCH_MAX = 64;

/** Default number of log-spaced α grid points before the golden-section refinement. */
export const DEFAULT_ALPHA_GRID_SIZE = 600;

/** The fitted parameters; scores are fractions, so P∞ and A are too. */
export interface ScalingLawParams {
  /** P∞, the source-determined ceiling (≤ 1). */
  readonly pInf: number;
  /** A, the amplitude of the gap to the ceiling (≥ 0). */
  readonly a: number;
  /** α, the power of the decay (≥ 0.02). */
  readonly alpha: number;
}

/** Options of {@link fitScalingLaw}; defaults in brackets. */
export interface FitOptions {
  /** Upper end of the α search [{@link DEFAULT_ALPHA_SEARCH_MAX}]; must exceed 0.02. */
  readonly alphaMax?: number;
  /** Log-spaced α grid points before refinement [{@link DEFAULT_ALPHA_GRID_SIZE}]; at least 3. */
  readonly gridSize?: number;
}

/** One budget of the fitted curve: observed (mean over runs) and predicted score. */
export interface FittedPoint {
  readonly r: number;
  readonly observed: number;
  readonly predicted: number;
}

/** The result of {@link fitScalingLaw}. */
export interface ScalingLawFit {
  readonly params: ScalingLawParams;
  /** In-sample predictions at every fitted budget, ascending r. */
  readonly predictions: readonly FittedPoint[];
  /** In-sample MAE in percentage points over the fitted grid (seed eq. 4 with 𝓡 = the fitted r). */
  readonly maePp: number;
  /** Residual sum of squares (fractions²) over the fitted budgets. */
  readonly sse: number;
  /** Which bounds hold with equality at the optimum. */
  readonly atBound: {
    readonly pInf: boolean;
    readonly a: boolean;
    /** `min`: α = 0.02; `searchMax`: α at the search cap (not a seed bound); null: interior. */
    readonly alpha: 'min' | 'searchMax' | null;
  };
}

/** P(r) = P∞ − A · r^−α. */
export function predictScalingLaw(params: ScalingLawParams, r: number): number {
  return params.pInf - params.a * r ** -params.alpha;
}

/** The bounded linear solve for one α: its parameters and residual sum of squares. */
interface LinearSolution {
  readonly pInf: number;
  readonly a: number;
  readonly sse: number;
}

function sseOf(xs: readonly number[], ys: readonly number[], pInf: number, a: number): number {
  let sse = 0;
  for (let i = 0; i < xs.length; i++) sse += (ys[i]! - pInf + a * xs[i]!) ** 2;
  return sse;
}

/**
 * Exact least squares of y ≈ P∞ − A·x subject to P∞ ≤ 1 and A ≥ 0. The objective is a convex
 * quadratic; its constrained minimum is the unconstrained one when that is feasible, otherwise it
 * lies on P∞ = 1 or on A = 0, where the one-dimensional minimum is the clamped closed form.
 */
export function solveBoundedLinear(xs: readonly number[], ys: readonly number[]): LinearSolution {
  const n = xs.length;
  const xMean = xs.reduce((s, x) => s + x, 0) / n;
  const yMean = ys.reduce((s, y) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i]! - xMean) ** 2;
    sxy += (xs[i]! - xMean) * (ys[i]! - yMean);
  }
  if (sxx > 0) {
    const slope = sxy / sxx; // = −A
    const pInf = yMean - slope * xMean;
    if (pInf <= FIT_BOUNDS.pInfMax && -slope >= FIT_BOUNDS.aMin) {
      return { pInf, a: -slope, sse: sseOf(xs, ys, pInf, -slope) };
    }
  }
  // Boundary P∞ = 1: minimize Σ (y − 1 + A·x)² over A ≥ 0.
  let sx2 = 0;
  let sxr = 0;
  for (let i = 0; i < n; i++) {
    sx2 += xs[i]! ** 2;
    sxr += xs[i]! * (FIT_BOUNDS.pInfMax - ys[i]!);
  }
  const aOnCeiling = sx2 > 0 ? Math.max(FIT_BOUNDS.aMin, sxr / sx2) : FIT_BOUNDS.aMin;
  const onCeiling = {
    pInf: FIT_BOUNDS.pInfMax,
    a: aOnCeiling,
    sse: sseOf(xs, ys, FIT_BOUNDS.pInfMax, aOnCeiling),
  };
  // Boundary A = 0: a constant, the mean clamped to the ceiling.
  const flatPInf = Math.min(FIT_BOUNDS.pInfMax, yMean);
  const flat = { pInf: flatPInf, a: FIT_BOUNDS.aMin, sse: sseOf(xs, ys, flatPInf, FIT_BOUNDS.aMin) };
  return onCeiling.sse <= flat.sse ? onCeiling : flat;
}

/** Golden-section minimization of a unimodal-in-bracket f on [lo, hi]; returns the argmin. */
function goldenSection(f: (u: number) => number, lo: number, hi: number): number {
  const invPhi = (Math.sqrt(5) - 1) / 2;
  let a = lo;
  let b = hi;
  let c = b - invPhi * (b - a);
  let d = a + invPhi * (b - a);
  let fc = f(c);
  let fd = f(d);
  for (let i = 0; i < 200 && b - a > 1e-12; i++) {
    if (fc <= fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - invPhi * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + invPhi * (b - a);
      fd = f(d);
    }
  }
  // The bracket's ends are candidates too: the minimum may sit on a bound of α.
  const candidates = [lo, (a + b) / 2, hi];
  let best = candidates[0]!;
  let bestValue = f(best);
  for (const u of candidates.slice(1)) {
    const value = f(u);
    if (value < bestValue) {
      best = u;
      bestValue = value;
    }
  }
  return best;
}

/**
 * Fits P(r) = P∞ − A·r^−α to `points` under the seed's bounds. Points sharing an r (one per
 * training seed) are first averaged, so each budget of the grid weighs the same, as in the MAE of
 * seed eq. 4. Needs at least 3 distinct r (three parameters); scores are fractions.
 *
 * When the best A is 0 the curve is flat and α is not identified; the reported α is then simply
 * where the search stopped, and `atBound.a` is true.
 */
export function fitScalingLaw(points: readonly CurvePoint[], options: FitOptions = {}): ScalingLawFit {
  const alphaMax = options.alphaMax ?? DEFAULT_ALPHA_SEARCH_MAX;
  const gridSize = options.gridSize ?? DEFAULT_ALPHA_GRID_SIZE;
  if (!(alphaMax > FIT_BOUNDS.alphaMin))
    throw new AnalysisInputError(
      'fitScalingLaw',
      `alphaMax must exceed ${FIT_BOUNDS.alphaMin}, got ${alphaMax}`,
    );
  if (!(Number.isInteger(gridSize) && gridSize >= 3))
    throw new AnalysisInputError('fitScalingLaw', `gridSize must be an integer ≥ 3, got ${gridSize}`);
  checkPoints('fitScalingLaw', points);
  const curve = meanCurve(points);
  if (curve.length < 3)
    throw new AnalysisInputError(
      'fitScalingLaw',
      `the fit has 3 parameters and needs at least 3 distinct r, got ${curve.length}` +
        (curve.length ? ` (r = ${curve.map((p) => p.r).join(', ')})` : ''),
    );
  const rs = curve.map((p) => p.r);
  const ys = curve.map((p) => p.score);
  const profile = (logAlpha: number): number =>
    solveBoundedLinear(
      rs.map((r) => r ** -Math.exp(logAlpha)),
      ys,
    ).sse;

  const uMin = Math.log(FIT_BOUNDS.alphaMin);
  const uMax = Math.log(alphaMax);
  const step = (uMax - uMin) / (gridSize - 1);
  let bestK = 0;
  let bestSse = Infinity;
  for (let k = 0; k < gridSize; k++) {
    const sse = profile(uMin + k * step);
    if (sse < bestSse) {
      bestSse = sse;
      bestK = k;
    }
  }
  const lo = uMin + Math.max(0, bestK - 1) * step;
  const hi = uMin + Math.min(gridSize - 1, bestK + 1) * step;
  let u = goldenSection(profile, lo, hi);
  if (profile(u) > bestSse) u = uMin + bestK * step;
  // Snap to a bound of the search when the refinement ends within 1e-9 (relative) of it, and to
  // the search cap when the curve is already numerically the α → ∞ step (the second budget's
  // (r/r_min)^−α below 1e-12): beyond that the residual only moves by rounding.
  const stepRatio = rs[1]! / rs[0]!;
  const alpha =
    u - uMin < 1e-9
      ? FIT_BOUNDS.alphaMin
      : uMax - u < 1e-9 || stepRatio ** -Math.exp(u) < 1e-12
        ? alphaMax
        : Math.exp(u);

  const solution = solveBoundedLinear(
    rs.map((r) => r ** -alpha),
    ys,
  );
  const params: ScalingLawParams = { pInf: solution.pInf, a: solution.a, alpha };
  const predictions = curve.map((p) => ({
    r: p.r,
    observed: p.score,
    predicted: predictScalingLaw(params, p.r),
  }));
  const maePp =
    (100 * predictions.reduce((s, p) => s + Math.abs(p.observed - p.predicted), 0)) / predictions.length;
  return {
    params,
    predictions,
    maePp,
    sse: solution.sse,
    atBound: {
      pInf: solution.pInf === FIT_BOUNDS.pInfMax,
      a: solution.a === FIT_BOUNDS.aMin,
      alpha: alpha === FIT_BOUNDS.alphaMin ? 'min' : alpha === alphaMax ? 'searchMax' : null,
    },
  };
}
