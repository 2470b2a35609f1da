import { executeChild, isCancellation, ParentClosePolicy } from '@temporalio/workflow';
import type { EvaluationBenchmark, EvaluationMetrics } from '../schemas/evaluation-contract.js';
import type { EvaluationSpec } from '../schemas/evaluation-spec.js';
import type { TrainingBenchmarks } from '../schemas/training-benchmarks.js';
import { listGroupTasks } from './evaluation-activities.js';
import type { Evaluation } from './evaluation.js';
import { planGroups } from './evaluation.js';
import { innermostFailure, MAX_FAILURE_CHARS } from './failure.js';

/**
 * Benchmark evaluation inside a GrpoTraining run (issue 15 point 4): a child Evaluation run per
 * evaluated checkpoint, its scores condensed into the iteration's metrics.
 */

/** The child Evaluation of step N: one id per (run, step), so a step is never evaluated twice. */
export function benchmarkRunId(runId: string, step: number): string {
  return `${runId}-eval-step-${step}`;
}

/** Whether the iteration just finished is evaluated: every `every`-th, the last, and one stopped at. */
export function benchmarksDue(
  benchmarks: TrainingBenchmarks | undefined,
  iteration: number,
  totalIterations: number,
  stopping: boolean,
): benchmarks is TrainingBenchmarks {
  if (!benchmarks) return false;
  const done = iteration + 1;
  return done % benchmarks.every === 0 || done >= totalIterations || stopping;
}

/** The child's spec: the section as an Evaluation of the run's step served by `server`. */
export function benchmarkEvaluationSpec(
  benchmarks: TrainingBenchmarks,
  runId: string,
  step: number,
): EvaluationSpec {
  const { every: _every, server, tau2, bfcl, math, search, synthetic, compareWith, ...rest } = benchmarks;
  return {
    kind: 'Evaluation',
    ...rest,
    name: `${rest.name} step-${step}`.slice(0, 80),
    policy: { checkpoint: { runId, step, server } },
    benchmarks: {
      ...(tau2 ? { tau2 } : {}),
      ...(bfcl ? { bfcl } : {}),
      ...(math ? { math } : {}),
      ...(search ? { search } : {}),
      ...(synthetic ? { synthetic } : {}),
    },
    ...(compareWith ? { compareWith } : {}),
  };
}

/**
 * Lists the tasks every group would run, so a task id the benchmark lacks (or an unreachable
 * evaluation worker) fails the training run at its start, not after its first iteration's compute.
 */
export async function checkBenchmarkTasks(benchmarks: TrainingBenchmarks, runId: string): Promise<void> {
  for (const group of planGroups(benchmarkEvaluationSpec(benchmarks, runId, 0), benchmarkRunId(runId, 0))) {
    await listGroupTasks(group);
  }
}

/** A benchmark group's scores in the iteration metrics (`benchmarks.bfcl.multi_turn_base.avg`). */
export interface BenchmarkGroupScores {
  readonly avg: number;
  readonly avgCi: readonly [number, number];
  /** pass^k for k = 1..trials (tau2's estimator). */
  readonly passHat: Record<string, number>;
  readonly tasks: number;
  readonly k: number;
  readonly modelErrors: number;
}

/** What an evaluated iteration's metrics hold under `benchmarks`. */
export type BenchmarkScores = {
  readonly evaluationId: string;
  /** Set when the child Evaluation failed: the run trains on, this step has no scores. */
  readonly failure?: string;
} & { readonly [benchmark in EvaluationBenchmark]?: Record<string, BenchmarkGroupScores | number> };

/** The child's metrics, per benchmark and group; BFCL's unweighted mean of its categories as `overall`. */
export function benchmarkScores(evaluationId: string, metrics: EvaluationMetrics): BenchmarkScores {
  const scores: Record<string, Record<string, BenchmarkGroupScores | number>> = {};
  for (const g of metrics.groups) {
    (scores[g.benchmark] ??= {})[g.group] = {
      avg: g.avgAtK,
      avgCi: g.avgAtKCi,
      passHat: g.passHatK,
      tasks: g.tasks,
      k: g.k,
      modelErrors: g.modelErrors,
    };
  }
  // A missing category leaves the overall N/A: it is not recorded rather than the others' mean.
  const overall = metrics.bfclOverall?.accuracy;
  if (overall !== undefined && overall !== null) (scores['bfcl'] ??= {})['overall'] = overall;
  return { evaluationId, ...scores };
}

/**
 * Evaluates step `step` as a child Evaluation, waited on: the iteration's metrics carry its scores,
 * and the next iteration starts after it (the policy server serves the pinned `<runId>@<step>`, so
 * the next step's weights would not disturb it, but a run's benchmarks and its rollouts then never
 * compete for the model endpoint). Cancelling the run cancels the child. A child that fails is
 * recorded as this step's failure and training goes on: a benchmark problem does not cost the run.
 */
export async function evaluateBenchmarks(
  benchmarks: TrainingBenchmarks,
  runId: string,
  step: number,
): Promise<BenchmarkScores> {
  const evaluationId = benchmarkRunId(runId, step);
  try {
    const summary = await executeChild<typeof Evaluation>('Evaluation', {
      workflowId: evaluationId,
      args: [benchmarkEvaluationSpec(benchmarks, runId, step)],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
    return benchmarkScores(evaluationId, summary.metrics);
  } catch (error) {
    if (isCancellation(error)) throw error;
    const { type, message } = innermostFailure(error);
    return { evaluationId, failure: `${type}: ${message}`.slice(0, MAX_FAILURE_CHARS) };
  }
}
