import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { TaskStage } from '../schemas/synthesis-records.js';

/** Sent by a task workflow to its dataset workflow when it enters a stage. */
export const taskStageSignal = defineSignal<[index: number, stage: TaskStage]>('taskStage');
/** Stage of task `index` of a dataset run (`pending` before it starts; `kept`/`rejected`/`failed` after). */
export const taskStageQuery = defineQuery<TaskStage | 'failed', [index: number]>('taskStage');
/** Stage of one task workflow. */
export const stageQuery = defineQuery<TaskStage>('stage');
