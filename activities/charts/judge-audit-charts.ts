/**
 * The chart of a judge stability audit (seed 000 App. B, Figure 6: score variance across training
 * steps): per audited checkpoint, the mean within-trajectory variance of the judge's k scores,
 * and the mean score on a second panel. Vega-Lite; render.ts draws it as SVG for the report.
 */
import type { JudgeAuditSummary } from '../../schemas/judge-audit-spec.js';
import { VEGA_LITE_SCHEMA, type ChartSpec } from './spec.js';

/**
 * Mean variance (bars with a line through them) and mean score per policy step. A checkpoint
 * whose variance is undefined (no trajectory with 2 scores) has no bar: a gap, not a 0.
 */
export function judgeVarianceChartSpec(runId: string, summary: JudgeAuditSummary): ChartSpec {
  const points = summary.checkpoints.map((c) => ({
    step: c.policyStep,
    variance: c.meanVariance,
    std: c.meanStd,
    score: c.meanScore,
    failures: c.failures,
  }));
  const x = { field: 'step', type: 'ordinal', title: 'policy step' } as const;
  const tooltip = [
    { field: 'step', type: 'ordinal' },
    { field: 'variance', type: 'quantitative', format: '.4f' },
    { field: 'std', type: 'quantitative', format: '.4f' },
    { field: 'score', type: 'quantitative', format: '.3f' },
    { field: 'failures', type: 'quantitative' },
  ] as const;
  return {
    $schema: VEGA_LITE_SCHEMA,
    title: `Judge stability (k = ${summary.k}, ${summary.judgeModel}): ${runId}`,
    background: 'white',
    data: { values: points },
    vconcat: [
      {
        width: 480,
        height: 200,
        mark: { type: 'bar', color: '#1f77b4' },
        encoding: {
          x,
          y: { field: 'variance', type: 'quantitative', title: 'mean variance of the k scores' },
          tooltip: [...tooltip],
        },
      },
      {
        width: 480,
        height: 120,
        mark: { type: 'line', point: true, color: '#d62728' },
        encoding: {
          x,
          y: { field: 'score', type: 'quantitative', title: 'mean score', scale: { domain: [0, 1] } },
          tooltip: [...tooltip],
        },
      },
    ],
  };
}
