import { getPool } from '../../activities/store/db.js';
import { connectClient } from '../../client/connect.js';
import { describeRun, queryRun } from '../../client/runs.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { iterationTasksQuery, latestMetricsQuery } from '../../workflows/grpo-controls.js';
import { cellStatesQuery } from '../../workflows/study-controls.js';
import { renderSummary } from '../summary-view.js';
import { renderRecord, renderTable } from '../table.js';
import { taskStatus, withRunningStages } from '../task-status.js';
import type { Command, CommandContext } from './command.js';

/**
 * `mockworld status <id> [--task N | --cells | --tasks | --metrics]`: a run's state, progress and
 * counts, or (with a flag) the one view of it that flag names.
 */
export const statusCommand: Command = {
  name: 'status',
  async run(context) {
    const { values } = context;
    if (values.task !== undefined) return printTaskStatus(context, values.task);
    if (values.cells) return printCellStates(context);
    if (values.tasks) return printIterationTasks(context);
    if (values.metrics) return printLatestMetrics(context);
    return printOverview(context);
  },
};

/** --task N: the stage of one task of the run. */
async function printTaskStatus({ print, needId }: CommandContext, task: string): Promise<number> {
  const status = await taskStatus(needId(), task);
  print(status.text, status.json);
  return 0;
}

/** --cells: the state of every cell of a scaling study. */
async function printCellStates({ print, needId }: CommandContext): Promise<number> {
  const id = needId();
  const states = await queryRun(await connectClient(), id, cellStatesQuery);
  const rows = Object.entries(states).map(([cell, state]) => ({ cell, state }));
  print(renderTable(rows), { workflowId: id, cells: states });
  return 0;
}

/** --tasks: the status of each task of a training run's current iteration. */
async function printIterationTasks({ print, needId }: CommandContext): Promise<number> {
  const id = needId();
  const tasks = await queryRun(await connectClient(), id, iterationTasksQuery);
  const rows = Object.entries(tasks).map(([task, status]) => ({ task, status }));
  print(renderTable(rows), { workflowId: id, tasks });
  return 0;
}

/** --metrics: the metrics of a training run's latest finished iteration. */
async function printLatestMetrics({ print, needId }: CommandContext): Promise<number> {
  const id = needId();
  const metrics = await queryRun(await connectClient(), id, latestMetricsQuery);
  print(Object.keys(metrics).length ? renderSummary(metrics) : 'no iteration has finished yet', {
    workflowId: id,
    metrics,
  });
  return 0;
}

/**
 * No flag: the run's state, progress and counts, from the run itself when it answers, else from
 * what it last recorded (search attributes) and Temporal's status.
 */
async function printOverview({ print, needId }: CommandContext): Promise<number> {
  const overview = await describeRun(await connectClient(), needId());
  if (overview.status && overview.type === 'Synthesis')
    overview.status.counts = await withRunningStages(
      getPool(loadEnvironment().DATABASE_URL),
      overview.workflowId,
      overview.status.counts,
    );
  const { status, recorded, statusError, ...temporal } = overview;
  const flat = status
    ? {
        ...temporal,
        state: status.state,
        progress: `${status.done}/${status.total}`,
        stage: status.stage,
        // One field, not one per stage: a count named `started` would hide the start time.
        counts: Object.entries(status.counts)
          .map(([stage, n]) => `${stage} ${n}`)
          .join(', '),
      }
    : {
        ...temporal,
        // A closed run's own record may predate its end (a failed or terminated run never
        // recorded one), so Temporal's status decides.
        state:
          temporal.temporalStatus === 'RUNNING'
            ? (recorded.state ?? '')
            : temporal.temporalStatus.toLowerCase(),
        progress: recorded.progress === undefined ? '' : `${Math.round(recorded.progress * 100)}%`,
        note: `progress as the run last recorded it (search attributes); stage and counts: ${statusError}`,
      };
  print(renderRecord(flat), overview);
  return 0;
}
