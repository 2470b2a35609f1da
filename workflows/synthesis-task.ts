import {
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { SynthesisActivities } from '../activities/synthesis/index.js';
import type { StageOutcome } from '../activities/synthesis/stages.js';
import type { RejectReason, TaskStage } from '../schemas/synthesis-records.js';
import type { SynthesisSpec } from '../schemas/synthesis-spec.js';
import { LONG_ACTIVITY } from './activity-options.js';
import { innermostFailure, MAX_FAILURE_CHARS } from './failure.js';
import { stageQuery, taskStageSignal } from './synthesis-controls.js';
import { taskIdOf } from '../activities/synthesis/task-id.js';

// A dead worker is noticed within the heartbeat timeout; a retried episode resumes from its last
// checkpointed turn, and every model call a retry repeats is served from the cache.
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
    Partial<Pick<SynthesisSpec, 'world' | 'taskSize'>>;
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
 * Its stage is queryable, and reported to the dataset workflow as it changes. A lifecycle that
 * fails (an error no retry fixed) records it on the task's row first: stage `failed`, the stage
 * it was in, the error's type and message; so no finished run leaves a row in a middle stage.
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
  const parent = workflowInfo().parent;
  setHandler(stageQuery, () => progress.stage, { description: stageQuery.description });

  // Stage reports to the dataset workflow are fire-and-forget: waiting for each would cost a
  // workflow task round trip per stage (measured: 100-160 ms per task on the dev server). The
  // parent ignores reports of tasks it has already settled, and learns outcomes from results.
  const enter = (next: TaskStage) => {
    progress.stage = next;
    if (!parent || next === 'kept' || next === 'rejected') return;
    getExternalWorkflowHandle(parent.workflowId)
      .signal(taskStageSignal, idx, next)
      .catch(() => undefined); // the dataset run may have closed (cancelled)
  };

  const base = {
    runId,
    taskId,
    idx,
    seed: spec.seed + idx,
    templates: spec.templates,
    taskSize: spec.taskSize,
  };
  const { templateIds } = progress;
  const finish = async (outcome: StageOutcome & { ok: false }): Promise<SynthesisTaskResult> => {
    await activities.finalizeTask({
      runId,
      taskId,
      idx,
      outcome: 'rejected',
      reason: outcome.reason,
      detail: outcome.detail,
      roles: spec.models,
      templateIds,
    });
    enter('rejected');
    return { outcome: 'rejected', reason: outcome.reason };
  };
  const step = async (next: TaskStage, run: () => Promise<StageOutcome>) => {
    enter(next);
    const outcome = await run();
    if (outcome.templateId) templateIds[next] = outcome.templateId;
    return outcome;
  };

  let outcome = await step('toolset', () =>
    activities.synthesizeToolset({ ...base, teacher: spec.models.teacher }),
  );
  if (!outcome.ok) return finish(outcome);
  outcome = await step('refine', () =>
    activities.refineToolset({ ...base, teacher: spec.models.teacher, refine: spec.refine }),
  );
  if (!outcome.ok) return finish(outcome);
  outcome = await step('instruction', () =>
    activities.writeFuzzyTask({ ...base, teacher: spec.models.teacher }),
  );
  if (!outcome.ok) return finish(outcome);

  enter('demonstrations');
  const episodeIds = await Promise.all(
    Array.from({ length: spec.demonstrationsPerTask }, (_, k) =>
      activities.runDemonstration({
        episodeId: `${taskId}-demo-${k}`,
        taskId,
        sampleIndex: k,
        maxTurns: spec.maxTurns,
        models: spec.models,
        templates: spec.templates,
        world: spec.world,
      }),
    ),
  );

  outcome = await step('rubric', () =>
    activities.extractRubric({
      ...base,
      rubricExtractor: spec.models.rubricExtractor,
      // Absent in specs from before the coverage judge: the activity uses the rubric extractor.
      coverageJudge: spec.models.coverageJudge,
      coverageThreshold: spec.coverageThreshold,
      episodeIds: episodeIds.map((e) => e.episodeId),
    }),
  );
  if (!outcome.ok) return finish(outcome);

  enter('store');
  await activities.finalizeTask({ runId, taskId, idx, outcome: 'kept', roles: spec.models, templateIds });
  enter('kept');
  return { outcome: 'kept', keptDemonstrations: outcome.facts?.keptDemonstrations ?? 0 };
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
