import type { WaitingModelRole } from '../../schemas/model-endpoint.js';
import type { RejectReason, TaskStage } from '../../schemas/synthesis-records.js';
import type { SynthesisSpec } from '../../schemas/synthesis-spec.js';
import { heartbeatProgress } from '../heartbeat.js';
import type { StageActivities, StageInput, StageOutcome } from './stages.js';

/** What the activities that run several stages of a task get: also the roles, for its provenance. */
export interface TaskRunInput extends StageInput {
  readonly roles: Record<string, WaitingModelRole>;
}

/**
 * Outcome of an activity that runs several stages: done (the template id of each stage it ran,
 * small facts), or rejected, already recorded on the task's row, with its reason.
 */
export type TaskStepOutcome =
  | {
      readonly ok: true;
      readonly templateIds: Record<string, string>;
      readonly facts?: Record<string, number>;
    }
  | { readonly ok: false; readonly reason: RejectReason; readonly templateIds: Record<string, string> };

/**
 * The activities of workflows/synthesis-task.ts that run several stages each (each stage is a
 * function of stages.ts): fewer activities per task, fewer history events (docs/benchmarks.md "Synthesis
 * through Temporal against a plain in-process loop").
 */
export function createTaskStepActivities(stages: StageActivities) {
  /** Records a rejection on the task's row and returns it for the workflow. */
  async function reject(
    input: TaskRunInput,
    outcome: StageOutcome & { ok: false },
    templateIds: Record<string, string>,
  ): Promise<TaskStepOutcome> {
    await stages.finalizeTask({
      runId: input.runId,
      taskId: input.taskId,
      idx: input.idx,
      outcome: 'rejected',
      reason: outcome.reason,
      detail: outcome.detail,
      roles: input.roles,
      templateIds,
    });
    return { ok: false, reason: outcome.reason, templateIds };
  }

  return {
    /**
     * Stages (a)-(c) in one activity: tool set, refinement, fuzzy instruction. Each stage writes
     * its output on the task's row and its model call is cached by a deterministic key, so a retry
     * runs them again at the cost of cache lookups, paying no model call twice. The current stage
     * goes out with the activity's heartbeats. A rejection is recorded on the row here (no
     * separate activity); the workflow gets the reason.
     */
    async prepareTask(
      input: TaskRunInput & { readonly teacher: WaitingModelRole; readonly refine: SynthesisSpec['refine'] },
    ): Promise<TaskStepOutcome> {
      const templateIds: Record<string, string> = {};
      const steps: [TaskStage, () => Promise<StageOutcome>][] = [
        ['toolset', () => stages.synthesizeToolset(input)],
        ['refine', () => stages.refineToolset(input)],
        ['instruction', () => stages.writeFuzzyTask(input)],
      ];
      for (const [stage, run] of steps) {
        heartbeatProgress({ stage });
        const outcome = await run();
        if (outcome.templateId) templateIds[stage] = outcome.templateId;
        if (!outcome.ok) return reject(input, outcome, templateIds);
      }
      return { ok: true, templateIds };
    },

    /**
     * Stages (e) and (f) in one activity: the coverage filter and rubric, then the task's outcome
     * and provenance on its row (kept or rejected). A retry repeats both from cached model calls.
     */
    async finishTask(
      input: TaskRunInput & {
        readonly rubricExtractor: WaitingModelRole;
        /** Absent in specs from before the coverage judge: the rubric extractor's role. */
        readonly coverageJudge?: WaitingModelRole;
        readonly coverageThreshold: number;
        readonly episodeIds: readonly string[];
        /** Template ids of the stages before (prepareTask's). */
        readonly templateIds: Record<string, string>;
      },
    ): Promise<TaskStepOutcome> {
      heartbeatProgress({ stage: 'rubric' });
      const templateIds = { ...input.templateIds };
      const outcome = await stages.extractRubric(input);
      if (outcome.templateId) templateIds['rubric'] = outcome.templateId;
      if (!outcome.ok) return reject(input, outcome, templateIds);
      heartbeatProgress({ stage: 'store' });
      await stages.finalizeTask({
        runId: input.runId,
        taskId: input.taskId,
        idx: input.idx,
        outcome: 'kept',
        roles: input.roles,
        templateIds,
      });
      return { ok: true, templateIds, facts: outcome.facts };
    },
  };
}
