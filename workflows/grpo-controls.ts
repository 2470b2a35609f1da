import { defineQuery, defineSignal } from '@temporalio/workflow';

/** Finish the current iteration, keep its checkpoint, then complete the run. */
export const stopSignal = defineSignal<[]>('stop');
/** Metrics of the latest finished iteration (empty before the first). */
export const latestMetricsQuery = defineQuery<Record<string, unknown>>('latestMetrics');
/** Status of each task of the current iteration: queued, rolling out, judged. */
export const iterationTasksQuery = defineQuery<Record<string, string>>('iterationTasks');
