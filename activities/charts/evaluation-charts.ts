/**
 * The chart of an Evaluation run: per benchmark group, Avg@k with its bootstrap interval, and
 * pass^k against k (tau2's estimator; its fall with k shows how consistent the policy is). Vega-Lite;
 * render.ts draws it as SVG for `mockworld report`.
 */
import type { EvaluationMetrics } from '../../schemas/evaluation-contract.js';
import { VEGA_LITE_SCHEMA, type ChartSpec } from './spec.js';

export function evaluationChartSpec(runId: string, metrics: EvaluationMetrics): ChartSpec {
  const groups = metrics.groups.map((g) => ({
    group: `${g.benchmark}/${g.group}`,
    benchmark: g.benchmark,
    avg: g.avgAtK,
    lo: g.avgAtKCi[0],
    hi: g.avgAtKCi[1],
    tasks: g.tasks,
    k: g.k,
  }));
  const passHat = metrics.groups.flatMap((g) =>
    Object.entries(g.passHatK).map(([k, value]) => ({
      group: `${g.benchmark}/${g.group}`,
      k: Number(k),
      value,
    })),
  );
  const ci = `${Math.round(metrics.confidence * 100)}% CI`;
  const y = { type: 'quantitative' as const, scale: { domain: [0, 1] } };
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: `Evaluation ${runId}: Avg@k (${ci}) and pass^k`,
    background: 'white',
    hconcat: [
      {
        width: Math.max(200, 60 * groups.length),
        height: 240,
        data: { values: groups },
        layer: [
          {
            mark: { type: 'bar' },
            encoding: {
              x: { field: 'group', type: 'nominal', title: null, sort: null },
              y: { ...y, field: 'avg', title: 'Avg@k' },
              color: { field: 'benchmark', type: 'nominal' },
              tooltip: [
                { field: 'group' },
                { field: 'avg', format: '.3f', title: 'Avg@k' },
                { field: 'lo', format: '.3f' },
                { field: 'hi', format: '.3f' },
                { field: 'tasks' },
                { field: 'k' },
              ],
            },
          },
          {
            mark: { type: 'rule', color: 'black' },
            encoding: {
              x: { field: 'group', type: 'nominal', sort: null },
              y: { ...y, field: 'lo' },
              y2: { field: 'hi' },
            },
          },
        ],
      },
      {
        width: 260,
        height: 240,
        data: { values: passHat },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'k', type: 'ordinal', title: 'k' },
          y: { ...y, field: 'value', title: 'pass^k' },
          color: { field: 'group', type: 'nominal', title: null },
          tooltip: [{ field: 'group' }, { field: 'k' }, { field: 'value', format: '.3f', title: 'pass^k' }],
        },
      },
    ],
  };
}
