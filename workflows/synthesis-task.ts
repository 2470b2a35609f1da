import { getExternalWorkflowHandle, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { SynthesisActivities } from '../activities/synthesis/index.js';
import type { StageOutcome } from '../activities/synthesis/stages.js';
import type { RejectReason, TaskStage } from '../schemas/synthesis-records.js';
import type { SynthesisSpec } from '../schemas/synthesis-spec.js';
import { LONG_ACTIVITY } from './activity-options.js';
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
  >;
}

/** How one task ended. */
export type SynthesisTaskResult =
  | { readonly outcome: 'kept'; readonly keptDemonstrations: number }
  | { readonly outcome: 'rejected'; readonly reason: RejectReason };

/** The task id of task `idx` of a run: also its workflow id. */
export { taskIdOf };

/**
 * One task's lifecycle (seed §3.1–3.3): tool set → refinement → fuzzy instruction → K teacher
 * demonstrations in the mock world → rubric and coverage filter → stored with provenance.
 * Its stage is queryable, and reported to the dataset workflow as it changes.
 */
export async function SynthesisTask(input: SynthesisTaskInput): Promise<SynthesisTaskResult> {
  const { runId, idx, spec } = input;
  const taskId = workflowInfo().workflowId;
  const parent = workflowInfo().parent;
  let stage: TaskStage = 'pending';
  setHandler(stageQuery, () => stage, { description: stageQuery.description });

  // Stage reports to the dataset workflow are fire-and-forget: waiting for each would cost a
  // workflow task round trip per stage (measured: 100-160 ms per task on the dev server). The
  // parent ignores reports of tasks it has already settled, and learns outcomes from results.
  const enter = (next: TaskStage) => {
    stage = next;
    if (!parent || next === 'kept' || next === 'rejected') return;
    getExternalWorkflowHandle(parent.workflowId)
      .signal(taskStageSignal, idx, next)
      .catch(() => undefined); // the dataset run may have closed (cancelled)
  };

  const base = { runId, taskId, idx, seed: spec.seed + idx, templates: spec.templates };
  const templateIds: Record<string, string> = {};
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
      }),
    ),
  );

  outcome = await step('rubric', () =>
    activities.extractRubric({
      ...base,
      rubricExtractor: spec.models.rubricExtractor,
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
