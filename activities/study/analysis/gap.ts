/**
 * Gap of a protocol to the RS reference (seed §7.2, App. 11.4): "averaging each method's gap to
 * RS over the full r ∈ {1, 2, 4, 8, 16, 32} sweep", in percentage points. Each budget's score is
 * the mean over its training seeds; only budgets both curves measured enter the mean.
 */
import { AnalysisInputError } from '../errors.js';
import { mean, meanCurve, type CurvePoint } from './stats.js';

/** One protocol's gap to the reference. */
export interface SweepGap {
  /** Mean over `perBudget` of the gap, in pp (positive: the protocol beats the reference). */
  readonly gapPp: number;
  /** 100 · (mean_p(r) − mean_ref(factor·r)) at each budget both curves have, ascending r. */
  readonly perBudget: readonly { readonly r: number; readonly gapPp: number }[];
}

/**
 * Sweep-mean gap of `protocol` to `reference` in pp over the budgets both measured; null when they
 * share no budget. Points may hold one entry per training seed.
 *
 * `referenceFactor` (default 1) compares the protocol at r with the reference at factor·r. The
 * seed's question synthesis (§6.1, paradigm 2; ~4× as many prompts) is read both ways: factor 1 is
 * its fixed-r reference, factor 4 its matched-budget reference (RS at r = 4k against synthesized
 * questions at r = k). `perBudget[i].r` is always the protocol's r.
 */
export function sweepMeanGap(
  protocol: readonly CurvePoint[],
  reference: readonly CurvePoint[],
  referenceFactor = 1,
): SweepGap | null {
  if (!(referenceFactor > 0))
    throw new AnalysisInputError('sweepMeanGap', `referenceFactor must be > 0, got ${referenceFactor}`);
  const ref = new Map(meanCurve(reference).map((p) => [p.r, p.score]));
  const perBudget = meanCurve(protocol)
    .filter((p) => ref.has(referenceFactor * p.r))
    .map((p) => ({ r: p.r, gapPp: 100 * (p.score - ref.get(referenceFactor * p.r)!) }));
  if (perBudget.length === 0) return null;
  return { gapPp: mean(perBudget.map((g) => g.gapPp)), perBudget };
}

/**
 * The aggregate gap over all method–budget points (App. 11.4: "an aggregate mean of −0.23 pp over
 * all 48 method–budget points"): the mean of every per-budget gap of every protocol, in pp.
 */
export function aggregateGap(gaps: readonly SweepGap[]): { gapPp: number; points: number } {
  const points = gaps.flatMap((g) => g.perBudget.map((b) => b.gapPp));
  if (points.length === 0) throw new AnalysisInputError('aggregateGap', 'no method–budget points to average');
  return { gapPp: mean(points), points: points.length };
}
