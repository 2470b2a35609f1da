import { defineQuery, defineSignal } from '@temporalio/workflow';
import { described } from './described.js';

/** Finish the current iteration, keep its checkpoint, then complete the run. */
export const stopSignal = described(
  defineSignal<[]>('stop'),
  'Finish the current iteration, keep its checkpoint, then complete the run.',
);
/** Metrics of the latest finished iteration (empty before the first). */
export const latestMetricsQuery = described(
  defineQuery<Record<string, unknown>>('latestMetrics'),
  'Metrics of the latest finished iteration (empty before the first).',
);
/** Status of each task of the current iteration: queued, rolling out, judged. */
export const iterationTasksQuery = described(
  defineQuery<Record<string, string>>('iterationTasks'),
  'Each task of the current iteration and its status: queued, rolling out, judged.',
);
