import { createHash } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { SynthesisSpec } from '../../schemas/synthesis-spec.js';
import { ASK_USER_TOOL, agentSystemPrompt } from '../world/index.js';
import { DatasetExportError } from './errors.js';

/** Where an export was written and how many tasks it holds. */
export interface ExportResult {
  readonly directory: string;
  readonly tasksFile: string;
  readonly verlFile: string;
  readonly rows: number;
}

const BATCH = 200;

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
 * Writes the kept tasks of a run in two layouts (see README "Dataset format"):
 * `tasks.jsonl` (prompt messages as the mock world shows them to the agent, tools, hidden context, rubric, kept demonstrations, provenance)
 * and `verl.jsonl` (verl's RL dataset layout: prompt, reward_model, extra_info with the rubric and
 * per-tool kwargs). Reads in batches, so memory stays flat whatever the dataset size.
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
  let rows = 0;
  try {
    for (let lastIdx = -1; ;) {
      const { rows: batch } = await pool.query(
        `SELECT t.*, coalesce((
            SELECT json_agg(json_build_object('episode_id', e.episode_id, 'messages', e.messages,
                                              'end_reason', e.end_reason, 'coverage', c.value) ORDER BY e.sample_index)
              FROM episodes e JOIN jsonb_array_elements(t.coverage) c ON c.value ->> 'episodeId' = e.episode_id
             WHERE e.task_id = t.task_id AND (c.value ->> 'kept')::boolean), '[]') AS demonstrations
           FROM tasks t WHERE t.run_id = $1 AND t.stage = 'kept' AND t.idx > $2 ORDER BY t.idx LIMIT $3`,
        [runId, lastIdx, BATCH],
      );
      if (batch.length === 0) break;
      for (const task of batch) {
        const prompt = [
          { role: 'system', content: agentSystemPrompt },
          { role: 'user', content: task.instruction },
        ];
        const tools = [...task.tools, ASK_USER_TOOL];
        await tasksOut.write(
          `${JSON.stringify({
            task_id: task.task_id,
            persona_id: task.persona_id,
            prompt,
            tools,
            hidden_context: task.hidden_context,
            rubric: task.rubric,
            workflow: task.workflow,
            demonstrations: task.demonstrations,
            provenance: task.provenance,
          })}\n`,
        );
        await verlOut.write(
          `${JSON.stringify({
            data_source: `mockworld/${runId}`,
            prompt,
            ability: 'agentic_tool_use',
            reward_model: { style: 'rubric', ground_truth: JSON.stringify(task.rubric) },
            extra_info: {
              index: task.idx,
              task_id: task.task_id,
              rubric: task.rubric,
              hidden_context: task.hidden_context,
              tools,
              tools_kwargs: Object.fromEntries(
                tools.map((tool: { function: { name: string } }) => [
                  tool.function.name,
                  { create_kwargs: { task_id: task.task_id } },
                ]),
              ),
            },
          })}\n`,
        );
        rows++;
        lastIdx = task.idx;
      }
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
