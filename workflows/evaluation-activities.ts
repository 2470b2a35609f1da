import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_ACTIVITY_ERRORS } from '../activities/errors.js';
import type { EvaluationActivities } from '../activities/evaluation/index.js';
import {
  EVAL_ERROR_TYPES,
  type EvalActivities,
  type EvalBenchmark,
  type ListTasksResult,
  type TrialInput,
  type TrialSummary,
} from '../schemas/evaluation-contract.js';
import type { ReasoningBenchmark, ReasoningTrialInput } from '../schemas/reasoning-evaluation.js';

/**
 * The Python evaluation worker's activities on `taskQueue` (schemas/evaluation-contract.ts).
 * A trial heartbeats its step count while its process runs, so a killed worker is noticed within
 * the heartbeat timeout and the trial retried elsewhere; a trial whose row is stored is never run
 * again, so retries are safe. An unreachable model endpoint (EvalModelUnreachable) is retried for
 * about 25 minutes of backoff before the run fails naming it; EVAL_ERROR_TYPES are never retried.
 */
const TRIAL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 30,
    nonRetryableErrorTypes: [...EVAL_ERROR_TYPES],
  },
};

/** Listing tasks and summarizing read files and rows: short, few retries. */
const SHORT_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 12,
    nonRetryableErrorTypes: [...EVAL_ERROR_TYPES],
  },
};

export function evalActivities(taskQueue: string) {
  const trial = proxyActivities<EvalActivities>({ ...TRIAL_OPTIONS, taskQueue });
  const short = proxyActivities<EvalActivities>({ ...SHORT_OPTIONS, taskQueue });
  return {
    runTrial: trial['eval.runTrial'],
    listTasks: short['eval.listTasks'],
    summarize: short['eval.summarize'],
  };
}

/** Failure types the CPU worker's benchmark activities throw that a retry cannot fix. */
const LOCAL_NON_RETRYABLE = [...NON_RETRYABLE_ACTIVITY_ERRORS, 'BenchmarkFileError', 'EvalTrialConflict'];

/**
 * The math and search benchmarks' activities, on the CPU worker's queue (the workflow's own): a
 * trial heartbeats every turn (and while a model call or the sandbox runs), and a retry resumes its
 * episode from the last turn.
 */
function localActivities() {
  const trial = proxyActivities<EvaluationActivities>({
    ...TRIAL_OPTIONS,
    retry: { ...TRIAL_OPTIONS.retry, nonRetryableErrorTypes: LOCAL_NON_RETRYABLE },
  });
  const short = proxyActivities<EvaluationActivities>({
    ...SHORT_OPTIONS,
    retry: { ...SHORT_OPTIONS.retry, nonRetryableErrorTypes: LOCAL_NON_RETRYABLE },
  });
  return { runTrial: trial.runReasoningBenchmarkTrial, listTasks: short.listReasoningBenchmarkTasks };
}

/** A math or search group's settings beyond a trial's: its file and the tools' settings. */
export type ReasoningGroupSettings = Pick<
  ReasoningTrialInput,
  'path' | 'maxTurns' | 'sandbox' | 'search' | 'judge'
>;

/** What a group's listing needs. */
export interface GroupListing {
  readonly benchmark: EvalBenchmark | ReasoningBenchmark;
  readonly group: string;
  readonly taskQueue: string;
  readonly split?: string;
  readonly taskIds?: string[];
  readonly limit?: number;
  readonly reasoning?: ReasoningGroupSettings;
}

/** A group's tasks: from the Python worker (tau2, BFCL) or from the benchmark file (math, search). */
export function listGroupTasks(group: GroupListing): Promise<ListTasksResult> {
  const selection = {
    ...(group.taskIds === undefined ? {} : { taskIds: group.taskIds }),
    ...(group.limit === undefined ? {} : { limit: group.limit }),
  };
  if (group.reasoning) {
    return localActivities().listTasks({
      benchmark: group.benchmark as ReasoningBenchmark,
      group: group.group,
      path: group.reasoning.path,
      ...selection,
    });
  }
  return evalActivities(group.taskQueue).listTasks({
    benchmark: group.benchmark as EvalBenchmark,
    group: group.group,
    ...(group.split === undefined ? {} : { split: group.split }),
    ...selection,
  });
}

/** One (task, trial) of a group, on the worker that runs its benchmark. */
export function runGroupTrial(
  group: GroupListing,
  trial: Omit<TrialInput, 'benchmark'> & { readonly benchmark: EvalBenchmark | ReasoningBenchmark },
): Promise<TrialSummary> {
  if (group.reasoning) {
    const { evaluationId, group: name, taskId, trial: index, trials, policy, sampling } = trial;
    return localActivities().runTrial({
      evaluationId,
      benchmark: trial.benchmark as ReasoningBenchmark,
      group: name,
      taskId,
      trial: index,
      trials,
      policy,
      sampling,
      ...group.reasoning,
    });
  }
  return evalActivities(group.taskQueue).runTrial({ ...trial, benchmark: trial.benchmark as EvalBenchmark });
}
