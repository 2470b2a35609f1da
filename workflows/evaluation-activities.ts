import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_ACTIVITY_ERRORS } from '../activities/errors.js';
import { EVALUATION_NON_RETRYABLE_ERRORS } from '../activities/evaluation/errors.js';
import type { EvaluationActivities } from '../activities/evaluation/index.js';
import type {
  EvalActivities,
  EvalBenchmark,
  EvaluationBenchmark,
  ListTasksResult,
  TrialInput,
  TrialSummary,
} from '../schemas/evaluation-contract.js';
import type { ReasoningBenchmark, ReasoningTrialInput } from '../schemas/reasoning-evaluation.js';
import type { SyntheticBenchmark } from '../schemas/synthetic-evaluation.js';
import type { LocalBenchmarkName } from '../schemas/local-benchmarks.js';
import { EVAL_SHORT_RETRY, EVAL_TRIAL_RETRY, withNonRetryable } from './activity-options.js';

/**
 * The Python evaluation worker's activities on `taskQueue` (schemas/evaluation-contract.ts).
 * A trial heartbeats its step count while its process runs, so a killed worker is noticed within
 * the heartbeat timeout and the trial retried elsewhere; a trial whose row is stored is never run
 * again, so retries are safe (the policies are activity-options.ts's).
 */
const TRIAL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: EVAL_TRIAL_RETRY,
};

/** Listing tasks and summarizing read files and rows: short, few retries. */
const SHORT_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: EVAL_SHORT_RETRY,
};

/**
 * The evaluation worker's listing and summary: they heartbeat from a background thread
 * (workers/evaluation/mockworld_eval/activities.py), so a killed worker costs half a minute, not
 * the five of start-to-close (the chaos bench's fault (i) met one killed inside a listing).
 */
const EVAL_SHORT_OPTIONS: ActivityOptions = { ...SHORT_OPTIONS, heartbeatTimeout: '30 seconds' };

export function evalActivities(taskQueue: string) {
  const trial = proxyActivities<EvalActivities>({ ...TRIAL_OPTIONS, taskQueue });
  const short = proxyActivities<EvalActivities>({ ...EVAL_SHORT_OPTIONS, taskQueue });
  return {
    runTrial: trial['eval.runTrial'],
    listTasks: short['eval.listTasks'],
    summarize: short['eval.summarize'],
  };
}

/**
 * Failure types the CPU worker's benchmark activities throw that a retry cannot fix: every CPU
 * activity's, and the evaluation area's own (BenchmarkFileError, EvalTrialConflict,
 * EvalJudgeFailed). activities/errors.ts lists the evaluation area's last, so each type is named
 * once and in the order recorded histories carry.
 */
const LOCAL_NON_RETRYABLE = [
  ...new Set([...NON_RETRYABLE_ACTIVITY_ERRORS, ...EVALUATION_NON_RETRYABLE_ERRORS]),
];

/** Options of the CPU worker's benchmark trials (test/integration/retry-table.test.ts runs them). */
export const LOCAL_TRIAL_OPTIONS: ActivityOptions = {
  ...TRIAL_OPTIONS,
  retry: withNonRetryable(EVAL_TRIAL_RETRY, LOCAL_NON_RETRYABLE),
};

/** Options of the CPU worker's benchmark listings. */
export const LOCAL_SHORT_OPTIONS: ActivityOptions = {
  ...SHORT_OPTIONS,
  retry: withNonRetryable(EVAL_SHORT_RETRY, LOCAL_NON_RETRYABLE),
};

/**
 * The math and search benchmarks' activities, on the CPU worker's queue (the workflow's own): a
 * trial heartbeats every turn (and while a model call or the sandbox runs), and a retry resumes its
 * episode from the last turn.
 */
function localActivities() {
  const trial = proxyActivities<EvaluationActivities>(LOCAL_TRIAL_OPTIONS);
  const short = proxyActivities<EvaluationActivities>(LOCAL_SHORT_OPTIONS);
  return {
    runTrial: trial.runReasoningBenchmarkTrial,
    listTasks: short.listReasoningBenchmarkTasks,
    runSyntheticTrial: trial.runSyntheticBenchmarkTrial,
    listSyntheticTasks: short.listSyntheticBenchmarkTasks,
    runLocalTrial: trial.runLocalBenchmarkTrial,
    listLocalTasks: short.listLocalBenchmarkTasks,
  };
}

/** A registered file benchmark's group (schemas/local-benchmarks.ts): its file and family settings. */
export interface LocalGroupSettings {
  readonly path: string;
  readonly settings: unknown;
}

/** A math or search group's settings beyond a trial's: its file and the tools' settings. */
export type ReasoningGroupSettings = Pick<
  ReasoningTrialInput,
  'path' | 'maxTurns' | 'sandbox' | 'search' | 'judge' | 'templates'
>;

/** The held-out synthetic tasks' settings beyond a trial's (the split and the mock world's roles). */
export type SyntheticGroupSettings = Pick<
  SyntheticBenchmark,
  | 'synthesisRunId'
  | 'heldOutTasks'
  | 'seed'
  | 'maxTurns'
  | 'toolSimulator'
  | 'userSimulator'
  | 'judge'
  | 'templates'
>;

/** What a group's listing needs. */
export interface GroupListing {
  readonly benchmark: EvaluationBenchmark;
  readonly group: string;
  readonly taskQueue: string;
  readonly split?: string;
  readonly taskIds?: string[];
  readonly limit?: number;
  readonly reasoning?: ReasoningGroupSettings;
  readonly synthetic?: SyntheticGroupSettings;
  readonly local?: LocalGroupSettings;
}

/** A group's tasks: from the Python worker (tau2, BFCL) or from the benchmark file (math, search). */
export function listGroupTasks(group: GroupListing): Promise<ListTasksResult> {
  const selection = {
    ...(group.taskIds === undefined ? {} : { taskIds: group.taskIds }),
    ...(group.limit === undefined ? {} : { limit: group.limit }),
  };
  if (group.synthetic) {
    const { synthesisRunId, heldOutTasks, seed } = group.synthetic;
    return localActivities().listSyntheticTasks({ synthesisRunId, heldOutTasks, seed, ...selection });
  }
  if (group.local) {
    return localActivities().listLocalTasks({
      benchmark: group.benchmark as LocalBenchmarkName,
      group: group.group,
      path: group.local.path,
      ...selection,
    });
  }
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
  trial: Omit<TrialInput, 'benchmark'> & { readonly benchmark: EvaluationBenchmark },
): Promise<TrialSummary> {
  const { evaluationId, group: name, taskId, trial: index, trials, policy, sampling, wallSeconds } = trial;
  // What every trial activity on the CPU worker takes (runs started before the bound have none).
  const shared = {
    evaluationId,
    group: name,
    taskId,
    trial: index,
    trials,
    policy,
    sampling,
    ...(wallSeconds === undefined ? {} : { wallSeconds }),
  };
  if (group.synthetic) {
    const { synthesisRunId: _run, heldOutTasks: _n, seed: _seed, ...roles } = group.synthetic;
    return localActivities().runSyntheticTrial({ ...shared, ...roles });
  }
  if (group.local) {
    const benchmark = trial.benchmark as LocalBenchmarkName;
    return localActivities().runLocalTrial({ ...shared, benchmark, ...group.local });
  }
  if (group.reasoning) {
    const benchmark = trial.benchmark as ReasoningBenchmark;
    return localActivities().runTrial({ ...shared, benchmark, ...group.reasoning });
  }
  return evalActivities(group.taskQueue).runTrial({ ...trial, benchmark: trial.benchmark as EvalBenchmark });
}
