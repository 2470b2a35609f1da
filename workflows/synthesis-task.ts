import {
  CancellationScope,
  isCancellation,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { SynthesisActivities } from '../activities/synthesis/index.js';
import type { TaskStepOutcome } from '../activities/synthesis/task-steps.js';
import type { RejectReason, TaskStage } from '../schemas/synthesis-records.js';
import type { SynthesisSpec } from '../schemas/synthesis-spec.js';
import { LONG_ACTIVITY } from './activity-options.js';
import { innermostFailure, MAX_FAILURE_CHARS } from './failure.js';
import { stageQuery } from './synthesis-controls.js';
import { taskIdOf } from '../activities/synthesis/task-id.js';

// A dead worker is noticed within the heartbeat timeout; a retried activity runs its stages again
// from what they stored (each episode from its last checkpointed turn), and every model call a
// retry repeats is served from the cache.
const activities = proxyActivities<SynthesisActivities>(LONG_ACTIVITY);

/** Input of one task's lifecycle: which task, and the spec settings its stages use. */
export interface SynthesisTaskInput {
  readonly runId: string;
  readonly idx: number;
  readonly spec: Pick<
    SynthesisSpec,
    'models' | 'refine' | 'demonstrationsPerTask' | 'maxTurns' | 'coverageThreshold' | 'seed' | 'templates'
  > &
    // Absent in the input of tasks started before the setting existed (their histories replay).
    Partial<Pick<SynthesisSpec, 'world' | 'taskSize' | 'demonstrationToolChoice'>>;
}

/** How one task ended. */
export type SynthesisTaskResult =
  | { readonly outcome: 'kept'; readonly keptDemonstrations: number }
  | { readonly outcome: 'rejected'; readonly reason: RejectReason };

/** The task id of task `idx` of a run: also its workflow id. */
export { taskIdOf };

/** Where a task's lifecycle is: its stage and the template ids its stages used. */
interface TaskProgress {
  stage: TaskStage;
  readonly templateIds: Record<string, string>;
}

/**
 * One task's lifecycle (seed §3.1–3.3): tool set → refinement → fuzzy instruction → K teacher
 * demonstrations in the mock world → rubric and coverage filter → stored with provenance.
 * Three activities: stages (a)-(c), the K demonstrations, then (e) and the stored outcome. Its
 * stage is queryable. A lifecycle that fails (an error no retry fixed) records it on the task's
 * row first: stage `failed`, the stage it was in, the error's type and message; so no finished
 * run leaves a row in a middle stage.
 */
export async function SynthesisTask(input: SynthesisTaskInput): Promise<SynthesisTaskResult> {
  const progress: TaskProgress = { stage: 'pending', templateIds: {} };
  try {
    return await runTask(input, progress);
  } catch (error) {
    if (!isCancellation(error)) await recordFailure(input, progress, error);
    throw error;
  }
}

async function runTask(input: SynthesisTaskInput, progress: TaskProgress): Promise<SynthesisTaskResult> {
  const { runId, idx, spec } = input;
  const taskId = workflowInfo().workflowId;
  setHandler(stageQuery, () => progress.stage, { description: stageQuery.description });

  // Three activities, no signals: every activity costs the history 6 events (scheduled, started,
  // completed, and the workflow task that follows), every stage report to the dataset workflow 5
  // more; so the stages that follow each other without a decision of the workflow's share one
  // activity, and the dataset workflow counts a running task as `started` (its stage is queried
  // here). The workflow's stage is the first stage of the running activity; the task's row
  // records the last one finished (activities/synthesis/task-stage.ts puts the two together).
  const base = {
    runId,
    taskId,
    idx,
    seed: spec.seed + idx,
    templates: spec.templates,
    taskSize: spec.taskSize,
    roles: spec.models,
  };
  const step = async (stage: TaskStage, run: () => Promise<TaskStepOutcome>) => {
    progress.stage = stage;
    const outcome = await run();
    Object.assign(progress.templateIds, outcome.templateIds);
    return outcome;
  };
  // A rejection is recorded on the row by the activity that rejected the task.
  const rejected = (reason: RejectReason): SynthesisTaskResult => {
    progress.stage = 'rejected';
    return { outcome: 'rejected', reason };
  };

  const prepared = await step('toolset', () =>
    activities.prepareTask({ ...base, teacher: spec.models.teacher, refine: spec.refine }),
  );
  if (!prepared.ok) return rejected(prepared.reason);

  progress.stage = 'demonstrations';
  const episodeIds = await activities.runDemonstrations({
    taskId,
    count: spec.demonstrationsPerTask,
    maxTurns: spec.maxTurns,
    turnToolChoice: spec.demonstrationToolChoice,
    models: spec.models,
    templates: spec.templates,
    world: spec.world,
  });

  const finished = await step('rubric', () =>
    activities.finishTask({
      ...base,
      rubricExtractor: spec.models.rubricExtractor,
      // Absent in specs from before the coverage judge: the activity uses the rubric extractor.
      coverageJudge: spec.models.coverageJudge,
      coverageThreshold: spec.coverageThreshold,
      episodeIds,
      templateIds: progress.templateIds,
    }),
  );
  if (!finished.ok) return rejected(finished.reason);
  progress.stage = 'kept';
  return { outcome: 'kept', keptDemonstrations: finished.facts?.keptDemonstrations ?? 0 };
}

/**
 * Writes the failure on the task's row (stage `failed`, where, which error); a failure to write it
 * leaves the original error to fail the workflow, which the dataset run counts either way.
 */
async function recordFailure(
  input: SynthesisTaskInput,
  progress: TaskProgress,
  error: unknown,
): Promise<void> {
  const failure = innermostFailure(error);
  await CancellationScope.nonCancellable(() =>
    activities.finalizeTask({
      runId: input.runId,
      taskId: workflowInfo().workflowId,
      idx: input.idx,
      outcome: 'failed',
      failedStage: progress.stage,
      reason: failure.type,
      detail: failure.message.slice(0, MAX_FAILURE_CHARS),
      roles: input.spec.models,
      templateIds: progress.templateIds,
    }),
  ).catch(() => undefined);
}
