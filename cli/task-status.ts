import { getPool } from '../activities/store/db.js';
import { connectClient } from '../client/connect.js';
import { taskStage } from '../client/runs.js';
import { loadEnvironment } from '../schemas/environment.js';
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
  // A task still running (or not started) is asked for its stage; a worker must answer that.
  const stage = ended ? String(record.outcome) : await taskStage(await connectClient(), runId, idx);
  const heading = `task ${idx} of ${runId}: ${stage}`;
  return {
    text: record ? `${heading}\n\n${renderTaskRecord(record)}` : heading,
    json: { workflowId: runId, task: idx, stage, ...(record ? { record } : {}) },
  };
}
