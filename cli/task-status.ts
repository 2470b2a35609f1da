import { WorkflowNotFoundError } from '@temporalio/client';
import type pg from 'pg';
import { getPool } from '../activities/store/db.js';
import { currentStage, STAGE_GROUPS } from '../activities/synthesis/task-stage.js';
import type { TaskStage } from '../schemas/synthesis-records.js';
import { taskIdOf } from '../activities/synthesis/task-id.js';
import { connectClient } from '../client/connect.js';
import { queryRun, taskStage } from '../client/runs.js';
import { loadEnvironment } from '../schemas/environment.js';
import { stageQuery } from '../workflows/synthesis-controls.js';
import { readTaskRecord, renderTaskRecord } from './task-outcomes.js';
import { UsageError } from './usage.js';

/**
 * `mockworld status <id> --task N`: one synthesis task's story from its row (outcome, where and why
 * it ended, its repairs, instruction, demonstrations, coverage, rubric), so it answers after the
 * run and with no worker; the stage a running task is in comes from its workflow.
 */
export async function taskStatus(runId: string, task: string): Promise<{ text: string; json: unknown }> {
  const idx = Number(task);
  if (!Number.isInteger(idx) || idx < 0)
    throw new UsageError(`--task takes a task index (0, 1, ...), got ${task}`);
  const record = await readTaskRecord(getPool(loadEnvironment().DATABASE_URL), runId, idx);
  const ended = record && ['kept', 'rejected', 'failed'].includes(String(record.outcome));
  // A task still running (or not started) is asked for its stage; a worker must answer that. The
  // run answers `started` for a running task: its own workflow knows which activity it runs, and
  // its row which of that activity's stages finished last (activities/synthesis/task-stage.ts).
  const stage = ended ? String(record.outcome) : await runningStage(runId, idx, record?.stage);
  const heading = `task ${idx} of ${runId}: ${stage}`;
  return {
    text: record ? `${heading}\n\n${renderTaskRecord(record)}` : heading,
    json: { workflowId: runId, task: idx, stage, ...(record ? { record } : {}) },
  };
}

async function runningStage(runId: string, idx: number, rowStage: unknown): Promise<string> {
  const client = await connectClient();
  const stage = await taskStage(client, runId, idx);
  if (stage !== 'started') return stage;
  try {
    const own = await queryRun(client, taskIdOf(runId, idx), stageQuery);
    return currentStage(own, typeof rowStage === 'string' ? rowStage : undefined);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return stage; // a reasoning problem: no task workflow
    throw error;
  }
}

/** The lifecycle stages in order; a running task is in the one after the last its row finished. */
const LIFECYCLE = STAGE_GROUPS.flat();

/**
 * A Synthesis run's per-stage counts with its running tasks (which the run counts as `started`:
 * it starts them and hears back only their outcome) placed in the stage each is in, read from
 * their rows in one query: the stage after the last one the row finished. A task whose row does
 * not exist yet, or a reasoning problem, stays `started`.
 */
export async function withRunningStages(
  pool: pg.Pool,
  runId: string,
  counts: Readonly<Record<string, number>>,
): Promise<Record<string, number>> {
  const running = counts.started ?? 0;
  if (running === 0) return { ...counts };
  const { rows } = await pool.query<{ stage: string; n: number }>(
    `SELECT stage, count(*)::int AS n FROM tasks
      WHERE run_id = $1 AND stage NOT IN ('kept', 'rejected', 'failed') GROUP BY stage`,
    [runId],
  );
  const refined: Record<string, number> = { ...counts };
  let placed = 0;
  for (const { stage, n } of rows) {
    const done = LIFECYCLE.indexOf(stage as TaskStage);
    const current = LIFECYCLE[Math.min(done + 1, LIFECYCLE.length - 1)]!;
    const count = Math.min(n, running - placed);
    if (count <= 0) break;
    refined[current] = (refined[current] ?? 0) + count;
    placed += count;
  }
  refined.started = running - placed;
  if (refined.started === 0) delete refined.started;
  return refined;
}
