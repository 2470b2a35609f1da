/**
 * The reward curve of a GRPO run as a standalone SVG (`mockworld report`): the viewer's reward
 * chart (activities/charts/training-charts.ts) rendered on the server by vega, so the report and
 * the viewer draw the same figure.
 */
import { renderChartSvg } from '../charts/render.js';
import { rewardChartSpec } from '../charts/training-charts.js';
import type { IterationMetrics } from './metrics.js';

/** Renders the reward per iteration of `runId`; iterations without a judged rollout have no point. */
export function renderRewardSvg(runId: string, iterations: readonly IterationMetrics[]): Promise<string> {
  return renderChartSvg(rewardChartSpec(runId, iterations));
}
