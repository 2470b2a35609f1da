import { condition, getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import type { EvaluationBenchmark, TrialInput, TrialSummary } from '../schemas/evaluation-contract.js';
import { mapBounded } from './bounded.js';
import {
  listGroupTasks,
  runGroupTrial,
  type LocalGroupSettings,
  type ReasoningGroupSettings,
  type SyntheticGroupSettings,
} from './evaluation-activities.js';
import {
  groupPauseSignal,
  groupProgressSignal,
  tasksQuery,
  type GroupStatus,
} from './evaluation-controls.js';

/** One benchmark group of an Evaluation run: a BFCL category, a tau2 domain, a math or search data set. */
export interface EvaluationGroupInput {
  readonly evaluationId: string;
  readonly benchmark: EvaluationBenchmark;
  readonly group: string;
  readonly split?: string;
  readonly taskIds?: string[];
  readonly limit?: number;
  readonly trials: number;
  /** Everything of a trial but its group, task and trial index. */
  readonly trial: Omit<TrialInput, 'evaluationId' | 'benchmark' | 'group' | 'taskId' | 'trial' | 'trials'>;
  readonly concurrency: number;
  /** The Python evaluation worker's queue (tau2, BFCL). */
  readonly taskQueue: string;
  /** Math and search: the data set's file and the tools' settings (run on the CPU worker). */
  readonly reasoning?: ReasoningGroupSettings;
  /** Held-out synthetic tasks: the split and the mock world's roles (run on the CPU worker). */
  readonly synthetic?: SyntheticGroupSettings;
  /** A registered file benchmark (schemas/local-benchmarks.ts): its file and settings (CPU worker). */
  readonly local?: LocalGroupSettings;
  /** The run was paused when this child started. */
  readonly paused: boolean;
}

/** What a group returns to its run (the trials are in eval_trials). */
export interface EvaluationGroupResult {
  readonly benchmark: EvaluationBenchmark;
  readonly group: string;
  readonly tasks: number;
  readonly trials: number;
  readonly meanReward: number | null;
  readonly modelErrors: number;
  readonly packages: Record<string, string>;
  readonly data: Record<string, string>;
}

/**
 * Lists the group's tasks and runs every (task, trial) on the evaluation worker, `concurrency` at a
 * time, in task order; between trials it honours the run's pause (forwarded by the parent). A child
 * per group keeps each history small: a tau2 domain of 114 tasks x 4 trials is ~3k events.
 */
export async function EvaluationGroup(input: EvaluationGroupInput): Promise<EvaluationGroupResult> {
  let paused = input.paused;
  setHandler(groupPauseSignal, (value) => void (paused = value), {
    description: groupPauseSignal.description,
  });
  const results = new Map<string, string[]>();
  setHandler(tasksQuery, () => Object.fromEntries(results), { description: tasksQuery.description });
  const parent = workflowInfo().parent;
  const parentHandle = parent ? getExternalWorkflowHandle(parent.workflowId, parent.runId) : undefined;

  const listed = await listGroupTasks(input);
  for (const taskId of listed.taskIds) results.set(taskId, Array<string>(input.trials).fill('pending'));
  const jobs = listed.taskIds.flatMap((taskId) =>
    Array.from({ length: input.trials }, (_, trial) => ({ taskId, trial })),
  );
  let done = 0;
  let rewardSum = 0;
  let modelErrors = 0;
  const status = (state: string): GroupStatus => ({
    benchmark: input.benchmark,
    group: input.group,
    state,
    done,
    total: jobs.length,
    meanReward: done ? rewardSum / done : null,
    modelErrors,
  });
  const report = (state: string) => parentHandle?.signal(groupProgressSignal, status(state));
  await report('running');

  await mapBounded(jobs, input.concurrency, async ({ taskId, trial }) => {
    await condition(() => !paused);
    results.get(taskId)![trial] = 'running';
    const summary: TrialSummary = await runGroupTrial(input, {
      ...input.trial,
      evaluationId: input.evaluationId,
      benchmark: input.benchmark,
      group: input.group,
      taskId,
      trial,
      trials: input.trials,
    });
    results.get(taskId)![trial] = summary.failure ? summary.termination : String(summary.reward);
    done++;
    rewardSum += summary.reward;
    if (summary.failure) modelErrors++;
    await report('running');
  });
  return {
    benchmark: input.benchmark,
    group: input.group,
    tasks: listed.taskIds.length,
    trials: jobs.length,
    meanReward: done ? rewardSum / done : null,
    modelErrors,
    packages: listed.packages,
    data: listed.data,
  };
}
