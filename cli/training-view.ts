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
      // The judge's controls on the iteration's tasks (reward/rubric-controls.ts).
      'judge controls': fixed(field(m.judgeControls, 'passRate'), 2),
    };
  });
  return renderTable(rows);
}

/**
 * One row per step of an SftTraining run: its epoch, learning rate, the token-mean NLL of the
 * assistant tokens of its batch (before the step's update), the gradient norm, the assistant tokens
 * trained on, the examples cut at maxSeqLen and the step's duration.
 */
export function renderSftSteps(iterations: readonly IterationMetrics[]): string {
  const rows = iterations.map(({ iteration, policyVersion, metrics: m }) => ({
    step: iteration + 1,
    'trained to': policyVersion,
    epoch: m.epoch,
    lr: typeof m.lr === 'number' ? m.lr.toExponential(2) : '',
    loss: fixed(m.loss, 4),
    'grad norm': fixed(field(m.trainer, 'grad_norm')),
    'assistant tokens': field(m.trainer, 'num_tokens'),
    // Cut at maxSeqLen: an example cut before its assistant turns trains nothing.
    truncated: field(m.trainer, 'truncated_samples'),
    'step s': fixed(field(m.trainer, 'duration_s'), 1),
  }));
  return renderTable(rows);
}

/**
 * One row per benchmarked step of a GrpoTraining run with `benchmarks` (issue 15 point 4): for each
 * benchmark group Avg@k and pass^k at its k (tau2's estimator), BFCL's overall (the unweighted mean
 * of its categories), and the child Evaluation run (`mockworld report <it>` has its intervals and
 * trials). '' when no iteration was benchmarked.
 */
export function renderBenchmarkSteps(iterations: readonly IterationMetrics[]): string {
  const benchmarked = iterations.filter(({ metrics }) => field(metrics, 'benchmarks') !== undefined);
  if (benchmarked.length === 0) return '';
  const rows = benchmarked.map(({ iteration, policyVersion, metrics }) => {
    const scores = field(metrics, 'benchmarks') as Record<string, unknown>;
    const row: Record<string, unknown> = { iteration, step: policyVersion };
    for (const benchmark of ['bfcl', 'tau2']) {
      const groups = field(scores, benchmark);
      if (groups === undefined) continue;
      for (const [group, value] of Object.entries(groups as Record<string, unknown>)) {
        if (group === 'overall') continue;
        const k = field(value, 'k');
        row[`${benchmark} ${group} Avg@k`] = fixed(field(value, 'avg'));
        row[`${benchmark} ${group} pass^k`] = fixed(field(field(value, 'passHat'), String(k)));
      }
      if (field(groups, 'overall') !== undefined)
        row[`${benchmark} overall`] = fixed(field(groups, 'overall'));
    }
    row['evaluation run'] = field(scores, 'evaluationId');
    if (field(scores, 'failure') !== undefined) row['failed'] = field(scores, 'failure');
    return row;
  });
  return renderTable(rows);
}
