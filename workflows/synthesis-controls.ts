import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { TaskStage } from '../schemas/synthesis-records.js';
import { described } from './described.js';

/**
 * Sent by a task workflow to its dataset workflow when it enters a stage. Not a user control: the
 * UI offers every signal a workflow handles, so the name says it is mockworld's own.
 */
export const taskStageSignal = described(
  defineSignal<[index: number, stage: TaskStage]>('mockworld.internal.taskStage'),
  'Internal: a SynthesisTask child reports its stage to this run. Not a user control; do not send.',
);
/** Stage of task `index` of a dataset run (`pending` before it starts; `kept`/`rejected`/`failed` after). */
export const taskStageQuery = described(
  defineQuery<TaskStage | 'failed', [index: number]>('taskStage'),
  'Stage of the task with this index (0-based): pending, a synthesis stage, or kept/rejected/failed.',
);
/** Stage of one task workflow. */
export const stageQuery = described(
  defineQuery<TaskStage>('stage'),
  'Stage of this task: pending, a synthesis stage, or kept/rejected.',
);
