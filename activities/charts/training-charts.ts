/**
 * Chart specs of a GRPO run: the reward curve of the report (and the viewer), and one curve per
 * numeric per-iteration metric for the viewer. Vega-Lite specs; render.ts draws them as SVG.
 */
import type { IterationMetrics } from '../training/metrics.js';
import { VEGA_LITE_SCHEMA, type ChartSpec } from './spec.js';

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const ROLLOUTS = 'rollouts: mean ± std (policy before the step)';
const HELD_OUT = 'held-out: mean (policy after it)';
/** Colours of the benchmark curves, after the rollouts' blue and the held-out red. */
const BENCHMARK_COLORS = ['#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf', '#bcbd22'];

/**
 * The benchmark scores of a GrpoTraining run with `benchmarks` (workflows/grpo-benchmarks.ts):
 * Avg@k per benchmark group at each benchmarked iteration, of the policy after its step.
 */
function benchmarkPoints(iterations: readonly IterationMetrics[]) {
  return iterations.flatMap(({ iteration, metrics }) => {
    const {
      evaluationId: _id,
      failure: _failure,
      ...scores
    } = (metrics.benchmarks ?? {}) as Record<string, unknown>;
    // Every benchmark the child Evaluation scored, whichever family (the registry's too).
    return Object.keys(scores).flatMap((benchmark) =>
      Object.entries((scores[benchmark] ?? {}) as Record<string, { avg?: unknown }>).flatMap(
        ([group, value]) =>
          group !== 'overall' && finite(value?.avg)
            ? [
                {
                  iteration,
                  series: `${benchmark} ${group}: Avg@k (policy after the step)`,
                  reward: value.avg,
                },
              ]
            : [],
      ),
    );
  });
}

/**
 * The rubric reward per iteration on its whole range [0, 1]: the rollouts' mean with ± one std
 * error bars, joined by a line, and the held-out evaluation's mean where one ran. Iterations
 * without a judged rollout have no point. A run with `benchmarks` adds a dashed Avg@k curve per
 * benchmark group (tau2 domain, BFCL category), on the same [0, 1] scale.
 */
export function rewardChartSpec(runId: string, iterations: readonly IterationMetrics[]): ChartSpec {
  const rollouts = iterations.flatMap(({ iteration, metrics }) => {
    if (!finite(metrics.rewardMean)) return [];
    const std = finite(metrics.rewardStd) ? metrics.rewardStd : 0;
    const clamp = (v: number) => Math.min(1, Math.max(0, v));
    return [
      {
        iteration,
        series: ROLLOUTS,
        reward: metrics.rewardMean,
        low: clamp(metrics.rewardMean - std),
        high: clamp(metrics.rewardMean + std),
      },
    ];
  });
  const evaluations = iterations.flatMap(({ iteration, metrics }) => {
    const mean = (metrics.evaluation as { rewardMean?: unknown } | undefined)?.rewardMean;
    return finite(mean) ? [{ iteration, series: HELD_OUT, reward: mean }] : [];
  });
  const line = iterations.map(({ iteration }) => ({
    iteration,
    series: ROLLOUTS,
    reward: rollouts.find((p) => p.iteration === iteration)?.reward ?? null,
  }));
  const benchmarks = benchmarkPoints(iterations);
  const benchmarkSeries = [...new Set(benchmarks.map((p) => p.series))];
  const last = Math.max(1, ...iterations.map((i) => i.iteration));
  const x = {
    field: 'iteration',
    type: 'quantitative',
    title: 'iteration',
    scale: { domain: [-0.5, last + 0.5], nice: false },
    axis: { tickMinStep: 1, format: 'd' },
  } as const;
  const y = {
    field: 'reward',
    type: 'quantitative',
    title: 'rubric reward',
    scale: { domain: [0, 1] },
  } as const;
  const color = {
    field: 'series',
    type: 'nominal',
    title: null,
    scale: {
      domain: [ROLLOUTS, HELD_OUT, ...benchmarkSeries],
      range: [
        '#1f77b4',
        '#d62728',
        ...benchmarkSeries.map((_, i) => BENCHMARK_COLORS[i % BENCHMARK_COLORS.length]),
      ],
    },
    legend: { orient: 'bottom', direction: 'vertical', labelLimit: 520 },
  } as const;
  const tooltip = [
    { field: 'iteration', type: 'quantitative' },
    { field: 'reward', type: 'quantitative', format: '.3f' },
    { field: 'series', type: 'nominal' },
  ] as const;
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: `GRPO reward per iteration: ${runId}`,
    width: 560,
    height: 280,
    background: 'white',
    layer: [
      {
        data: { values: rollouts },
        mark: { type: 'rule' },
        encoding: {
          x,
          y: { field: 'low', type: 'quantitative', scale: { domain: [0, 1] } },
          y2: { field: 'high' },
          color,
        },
      },
      // An iteration that judged nothing is a gap in the line (null breaks the path), not a bridge.
      { data: { values: line }, mark: { type: 'line' }, encoding: { x, y, color } },
      {
        data: { values: rollouts },
        mark: { type: 'point', filled: true, size: 50 },
        encoding: {
          x,
          y,
          color,
          tooltip: [...tooltip, { field: 'low', format: '.3f' }, { field: 'high', format: '.3f' }],
        },
        params: [{ name: 'zoom', select: { type: 'interval', encodings: ['x'] }, bind: 'scales' }],
      },
      {
        data: { values: evaluations },
        mark: { type: 'square', filled: true, size: 60 },
        encoding: { x, y, color, tooltip: [...tooltip] },
      },
      ...(benchmarks.length
        ? [
            {
              data: { values: benchmarks },
              mark: {
                type: 'line',
                strokeDash: [4, 2],
                point: { shape: 'triangle-up', filled: true, size: 60 },
              },
              encoding: { x, y, color, tooltip: [...tooltip] },
            },
          ]
        : []),
    ],
  } as unknown as ChartSpec; // vega-lite's typings reject readonly literals; the render tests check the spec
}

/** One point of a per-iteration metric. */
export interface MetricPoint {
  readonly iteration: number;
  readonly value: number;
}

/**
 * Every numeric leaf of the iterations' metrics, by dotted path (`trainer.loss`,
 * `endReasons.max_turns`, `evaluation.rewardMean`), in first-seen order: what the viewer plots.
 */
export function metricSeries(iterations: readonly IterationMetrics[]): Map<string, MetricPoint[]> {
  const series = new Map<string, MetricPoint[]>();
  const walk = (iteration: number, prefix: string, value: unknown) => {
    if (finite(value)) {
      if (prefix === 'iteration') return; // the x axis itself
      const points = series.get(prefix) ?? [];
      points.push({ iteration, value });
      series.set(prefix, points);
    } else if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value))
        walk(iteration, prefix ? `${prefix}.${key}` : key, inner);
    }
  };
  for (const { iteration, metrics } of iterations) walk(iteration, '', metrics);
  return series;
}

/** An interactive line chart of one metric: tooltips, drag to pan and wheel to zoom the x axis. */
export function metricChartSpec(name: string, points: readonly MetricPoint[]): ChartSpec {
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: name,
    width: 320,
    height: 160,
    background: 'white',
    data: { values: points.map((p) => ({ ...p })) },
    mark: { type: 'line', point: true, tooltip: true },
    encoding: {
      x: { field: 'iteration', type: 'quantitative', axis: { tickMinStep: 1, format: 'd' } },
      y: { field: 'value', type: 'quantitative', title: name, scale: { zero: false } },
    },
    params: [{ name: 'zoom', select: { type: 'interval', encodings: ['x'] }, bind: 'scales' }],
  } as unknown as ChartSpec; // vega-lite's typings reject readonly literals; the render tests check the spec
}
