import { defineQuery } from '@temporalio/workflow';
import type { TaskStage } from '../schemas/synthesis-records.js';
import { described } from './described.js';

/**
 * Stage of task `index` of a dataset run: `pending` before it starts, `started` while it runs (its
 * task workflow answers `stage`; task workflows do not report stages, which would cost each task
 * 5 history events per stage), `kept`/`rejected`/`failed` after.
 */
export const taskStageQuery = described(
  defineQuery<TaskStage | 'failed', [index: number]>('taskStage'),
  'Stage of the task with this index (0-based): pending, started (running: ask its task workflow), or kept/rejected/failed.',
);
/**
 * Stage of one task workflow: the first stage of the activity it runs (toolset for stages
 * toolset-instruction, demonstrations, rubric for rubric-store); its row has the last stage done.
 */
export const stageQuery = described(
  defineQuery<TaskStage>('stage'),
  'Stage of this task: pending, the first stage of the activity it runs (toolset, demonstrations, rubric), or kept/rejected.',
);
