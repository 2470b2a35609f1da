import { createHash } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { SynthesisSpec } from '../../schemas/synthesis-spec.js';
import { keptTasks } from '../export/kept-tasks.js';
import { taskRecord, verlRecord } from '../export/layouts.js';
import { agentSystemPrompt } from '../world/index.js';
import { DatasetExportError } from './errors.js';

/** Where an export was written and how many tasks it holds. */
export interface ExportResult {
  readonly directory: string;
  readonly tasksFile: string;
  readonly verlFile: string;
  readonly rows: number;
}

/**
 * The folder name of a run's dataset under `<MOCKWORLD_HOME>/datasets/`. A workflow id is any
 * text (`/`, `..`, quotes), so one that is not a plain file name is made one (unsafe characters
 * replaced, plus a hash of the id to keep ids apart): an id must never place files outside.
 */
export function datasetDirectoryName(runId: string): string {
  if (/^[A-Za-z0-9_.-]{1,200}$/.test(runId) && !/^\.+$/.test(runId)) return runId;
  const plain = runId
    .replace(/[^A-Za-z0-9_.-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 100);
  return `${plain}-${createHash('sha256').update(runId).digest('hex').slice(0, 12)}`;
}

/**
 * Writes the kept tasks of a run in two layouts (see docs/synthesis.md "Dataset format"):
 * `tasks.jsonl` (prompt messages as the mock world shows them to the agent, tools, hidden context, rubric, kept demonstrations, provenance)
 * and `verl.jsonl` (verl's RL dataset layout: prompt, reward_model, extra_info with the rubric and
 * per-tool kwargs); the rows are built in activities/export/layouts.ts, as the other formats'.
 * Reads in batches, so memory stays flat whatever the dataset size.
 */
export async function exportDataset(
  pool: pg.Pool,
  runId: string,
  directory: string,
  agentSystemPrompt: string,
): Promise<ExportResult> {
  await mkdir(directory, { recursive: true });
  const tasksFile = path.join(directory, 'tasks.jsonl');
  const verlFile = path.join(directory, 'verl.jsonl');
  const tasksOut = await open(tasksFile, 'w');
  const verlOut = await open(verlFile, 'w');
  const context = { runId, agentSystemPrompt };
  let rows = 0;
  try {
    for await (const task of keptTasks(pool, runId)) {
      await tasksOut.write(`${JSON.stringify(taskRecord(task, context))}\n`);
      await verlOut.write(`${JSON.stringify(verlRecord(task, context))}\n`);
      rows++;
    }
  } finally {
    await tasksOut.close();
    await verlOut.close();
  }
  return { directory, tasksFile, verlFile, rows };
}

/**
 * Exports a synthesis run by id: reads its spec from `runs` for the agent prompt the run used, and
 * writes both layouts to `directory`.
 */
export async function exportRunDataset(
  pool: pg.Pool,
  runId: string,
  directory: string,
): Promise<ExportResult> {
  const { rows } = await pool.query('SELECT kind, spec FROM runs WHERE run_id = $1', [runId]);
  if (!rows[0]) throw new DatasetExportError(runId, 'no run of that id is registered in the runs table');
  if (rows[0].kind !== 'Synthesis')
    throw new DatasetExportError(runId, `it is a ${rows[0].kind} run; only Synthesis runs have a dataset`);
  const spec = rows[0].spec as SynthesisSpec;
  return exportDataset(pool, runId, directory, agentSystemPrompt(spec.templates));
}
