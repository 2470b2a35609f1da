/**
 * What the stage functions of stages.ts and rubric-stage.ts share: their dependencies, the reads
 * and writes of the task's `tasks` row, and how their prompts word a range.
 */
import type pg from 'pg';
import type { TaskStage } from '../../schemas/synthesis-records.js';
import type { ModelClient } from '../llm/index.js';
import { SynthesisStageError } from './errors.js';
import type { ToolRepair } from './tool-validation.js';

/** "from to max" as the stage prompts write a range ("3 to 8"), or the one count when they meet. */
export const range = (from: number, max: number) =>
  Math.min(from, max) === max ? `${max}` : `${from} to ${max}`;

/** What the stage functions share: the database pool (a getter, called per query) and the model client. */
export interface StageDeps {
  readonly pool: () => pg.Pool;
  readonly models: ModelClient;
}

/** Moves the task's row to `stage`, writing `fields` (tasks columns) in the same UPDATE. */
export async function setStage(
  pool: () => pg.Pool,
  taskId: string,
  stage: TaskStage,
  fields: Record<string, unknown> = {},
): Promise<void> {
  const names = Object.keys(fields);
  // Column names are spliced into the SQL (identifiers cannot be parameters): only plain names.
  const bad = names.find((name) => !/^[a-z_]{1,63}$/.test(name));
  if (bad !== undefined)
    throw new SynthesisStageError(taskId, `setStage: "${bad}" is not a tasks column name`);
  const assignments = names.map((name, i) => `${name} = $${i + 3}`);
  await pool().query(
    `UPDATE tasks SET stage = $2, updated_at = now()${assignments.map((a) => `, ${a}`).join('')} WHERE task_id = $1`,
    [taskId, stage, ...names.map((n) => fields[n])],
  );
}

/** Records a stage's tool-set repairs on the task's row, keyed by stage (a retry writes the same). */
export async function recordRepairs(
  pool: () => pg.Pool,
  taskId: string,
  stage: TaskStage,
  repairs: readonly ToolRepair[],
) {
  await pool().query(
    `UPDATE tasks SET tool_repairs = coalesce(tool_repairs, '{}'::jsonb) || jsonb_build_object($2::text, $3::jsonb) WHERE task_id = $1`,
    [taskId, stage, JSON.stringify(repairs)],
  );
}

/** The task's row; a stage after (a) fails if stage (a) never created it. */
export async function readTask(pool: () => pg.Pool, taskId: string) {
  const { rows } = await pool().query('SELECT * FROM tasks WHERE task_id = $1', [taskId]);
  if (!rows[0]) throw new SynthesisStageError(taskId, 'it does not exist; the toolset stage creates it');
  return rows[0];
}

/** A `tasks` row as PostgreSQL returns it (untyped columns). */
export type TaskRow = Awaited<ReturnType<typeof readTask>>;
