/**
 * The chart of one r-sweep of a scaling study (the report's figures and the viewer's fits): the
 * mean score of each budget with ± one sample std over training seeds, the scaling-law fit
 * P(r) = P∞ − A·r^−α over the measured range, and the held-out fit (r ≤ trainMaxR) extended to
 * the target budget. x is r on a log2 axis; scores are shown in percent.
 */
import { predictScalingLaw, type ScalingLawParams } from '../study/analysis/fit.js';
import type { BudgetSummary } from '../study/analysis/stats.js';
import { VEGA_LITE_SCHEMA, type ChartSpec } from './spec.js';

/** What one curve's figure shows. Scores are fractions; the figure shows percent. */
export interface CurvePlotInput {
  /** Figure title, e.g. `Physics — RS`. */
  readonly title: string;
  /** Legend name of the measured series. */
  readonly label: string;
  /** Per-budget mean ± std over seeds, any order. */
  readonly budgets: readonly BudgetSummary[];
  /** k of the scores' mean@k (the axis says it); absent: the seed's 8. */
  readonly samplesPerQuestion?: number;
  /** The fit on all budgets, drawn solid over the measured range; null: not drawn. */
  readonly fit: ScalingLawParams | null;
  /** The held-out fit, drawn dashed from the smallest r to `targetR`; null/absent: not drawn. */
  readonly heldOut?: {
    readonly params: ScalingLawParams;
    readonly trainMaxR: number;
    readonly targetR: number;
  } | null;
}

const CURVE_SAMPLES = 120;
const round = (v: number) => Math.round(v * 1e4) / 1e4;

/** `count + 1` points of a fitted curve, evenly spaced in log2 r from `from` to `to`. */
function sampleCurve(params: ScalingLawParams, from: number, to: number, series: string) {
  return Array.from({ length: CURVE_SAMPLES + 1 }, (_, i) => {
    const r = 2 ** (Math.log2(from) + ((Math.log2(to) - Math.log2(from)) * i) / CURVE_SAMPLES);
    return { r: round(r), pct: round(100 * predictScalingLaw(params, r)), series };
  });
}

/** The Vega-Lite spec of one curve's figure. */
export function curveChartSpec(input: CurvePlotInput): ChartSpec {
  const budgets = [...input.budgets].sort((a, b) => a.r - b.r);
  const rs = budgets.map((b) => b.r);
  const rMin = Math.min(...rs);
  const measured = `${input.label}: mean ± std over seeds`;
  const fitName = input.fit
    ? `fit P∞=${(100 * input.fit.pInf).toFixed(1)}%, A=${(100 * input.fit.a).toFixed(1)}, α=${input.fit.alpha.toFixed(2)}`
    : null;
  const heldOutName = input.heldOut
    ? `held-out fit (r ≤ ${input.heldOut.trainMaxR}) → r = ${input.heldOut.targetR}`
    : null;
  const points = budgets.map((b) => ({
    r: b.r,
    pct: round(100 * b.mean),
    low: round(100 * (b.mean - (b.std ?? 0))),
    high: round(100 * (b.mean + (b.std ?? 0))),
    seeds: b.n,
    series: measured,
  }));
  const fitCurve = input.fit && fitName ? sampleCurve(input.fit, rMin, Math.max(...rs), fitName) : [];
  const heldOutCurve =
    input.heldOut && heldOutName
      ? sampleCurve(input.heldOut.params, rMin, input.heldOut.targetR, heldOutName)
      : [];
  const series = [measured, fitName, heldOutName].filter((s): s is string => s !== null);
  const palette: Record<string, string> = { [measured]: '#1f77b4' };
  if (fitName) palette[fitName] = '#d62728';
  if (heldOutName) palette[heldOutName] = '#ff7f0e';
  const ticks = [...new Set([...rs, ...(input.heldOut ? [input.heldOut.targetR] : [])])].sort(
    (a, b) => a - b,
  );
  const x = {
    field: 'r',
    type: 'quantitative',
    title: 'responses per question r (log2 scale)',
    scale: { type: 'log', base: 2, padding: 16 },
    axis: { values: ticks, format: '~g' },
  } as const;
  const y = {
    field: 'pct',
    type: 'quantitative',
    title: `score (mean@${input.samplesPerQuestion ?? 8}, %)`,
    scale: { zero: false },
  } as const;
  const color = {
    field: 'series',
    type: 'nominal',
    title: null,
    scale: { domain: series, range: series.map((s) => palette[s]!) },
    legend: { orient: 'bottom', direction: 'vertical', labelLimit: 520 },
  } as const;
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: input.title,
    width: 520,
    height: 280,
    background: 'white',
    layer: [
      curveLayer(fitCurve, x, y, color, []),
      curveLayer(heldOutCurve, x, y, color, [6, 4]),
      {
        data: { values: points },
        mark: { type: 'rule' },
        encoding: { x, y: { field: 'low', type: 'quantitative' }, y2: { field: 'high' }, color },
      },
      {
        data: { values: points },
        mark: { type: 'point', filled: true, size: 60 },
        encoding: {
          x,
          y,
          color,
          tooltip: [
            { field: 'r', type: 'quantitative' },
            { field: 'pct', type: 'quantitative', title: 'mean %', format: '.2f' },
            { field: 'low', type: 'quantitative', title: 'mean − std', format: '.2f' },
            { field: 'high', type: 'quantitative', title: 'mean + std', format: '.2f' },
            { field: 'seeds', type: 'quantitative' },
          ],
        },
      },
    ],
  } as unknown as ChartSpec; // vega-lite's typings reject readonly literals; the render tests check the spec
}

/** A fitted curve as a line layer (solid, or dashed for the held-out fit) with tooltips. */
function curveLayer(values: unknown[], x: object, y: object, color: object, dash: number[]) {
  return {
    data: { values },
    mark: { type: 'line', strokeWidth: 2, strokeDash: dash },
    encoding: {
      x,
      y,
      color,
      tooltip: [
        { field: 'series', type: 'nominal' },
        { field: 'r', type: 'quantitative', format: '.3~f' },
        { field: 'pct', type: 'quantitative', title: 'predicted %', format: '.2f' },
      ],
    },
  };
}
