import type { IterationMetrics } from '../activities/training/metrics.js';
import { renderTable } from './table.js';

/** A number with `digits` decimals; '' for a missing or non-numeric value. */
function fixed(value: unknown, digits = 3): string {
  return typeof value === 'number' && Number.isFinite(value) ? value.toFixed(digits) : '';
}

function field(record: unknown, key: string): unknown {
  return record !== null && typeof record === 'object' ? (record as Record<string, unknown>)[key] : undefined;
}

/**
 * One row per GRPO iteration, the figures seed 000 §3.4 tracks: rubric reward (mean ± std over the
 * judged rollouts, sampled from the policy before the iteration's step) and its parts,
 * forbidden-violation rate, turns, the policy's completion tokens, groups without a learning
 * signal, the trainer step (loss, clip fraction, duration) and the held-out evaluation reward,
 * where one ran, of the policy after the step.
 */
export function renderIterations(iterations: readonly IterationMetrics[]): string {
  const rows = iterations.map(({ iteration, policyVersion, metrics: m }) => {
    const trainer = m.trainer;
    const mean = fixed(m.rewardMean);
    return {
      iteration,
      'sampled from': `step-${iteration}`,
      'trained to': policyVersion,
      reward: mean && `${mean} ± ${fixed(m.rewardStd)}`,
      'sub-goals': fixed(m.subGoalFraction),
      interactions: fixed(m.interactionFraction),
      forbidden: fixed(m.forbiddenViolationRate),
      turns: fixed(m.turnsMean, 1),
      'policy tokens': field(field(m, 'policyTokens'), 'completion'),
      'zero-var groups': m.zeroVarianceGroups,
      loss: fixed(field(trainer, 'loss'), 4),
      'clip frac': fixed(field(trainer, 'clip_frac')),
      'step s': fixed(field(trainer, 'duration_s'), 1),
      'held-out reward': fixed(field(m.evaluation, 'rewardMean')), // of the policy trained to
    };
  });
  return renderTable(rows);
}
