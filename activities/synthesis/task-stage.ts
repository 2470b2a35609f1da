import type { TaskStage } from '../../schemas/synthesis-records.js';

/**
 * The stages of a task's lifecycle each activity of workflows/synthesis-task.ts runs, in order: the
 * workflow knows which activity runs (its first stage); the task's row knows the last stage that
 * finished (each stage writes `stage` when it is done).
 */
export const STAGE_GROUPS: readonly (readonly TaskStage[])[] = [
  ['toolset', 'refine', 'instruction'], // prepareTask
  ['demonstrations'], // runDemonstrations
  ['rubric', 'store'], // finishTask
];

/**
 * The stage a task is in: `workflowStage` (the first stage of the activity its workflow runs),
 * refined by `rowStage` (the last stage its row records as finished) to the stage after it within
 * that activity. Any other stage (pending, started, an outcome) is returned as it is.
 */
export function currentStage(workflowStage: TaskStage, rowStage: string | null | undefined): TaskStage {
  const group = STAGE_GROUPS.find((g) => g[0] === workflowStage);
  const done = group?.indexOf(rowStage as TaskStage) ?? -1;
  if (!group || done < 0) return workflowStage;
  return group[Math.min(done + 1, group.length - 1)]!;
}
