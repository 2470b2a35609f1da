import type pg from 'pg';
import type { Rubric } from '../../schemas/synthesis-records.js';

/** One kept demonstration of a task: the teacher's episode that covered enough of the rubric. */
export interface KeptDemonstration {
  readonly episode_id: string;
  /** The transcript as OpenAI chat messages (system, user, assistant with tool_calls, tool). */
  readonly messages: readonly Record<string, unknown>[];
  readonly end_reason: string | null;
  readonly coverage: unknown;
}

/** A kept task as the exports read it from PostgreSQL (columns of `tasks`, plus its demonstrations). */
export interface KeptTask {
  readonly task_id: string;
  readonly run_id: string;
  readonly idx: number;
  readonly persona_id: string;
  readonly instruction: string;
  readonly tools: readonly { type: string; function: { name: string } & Record<string, unknown> }[];
  readonly hidden_context: string;
  readonly rubric: Rubric;
  readonly workflow: readonly string[] | null;
  readonly provenance: unknown;
  readonly demonstrations: readonly KeptDemonstration[];
}

const BATCH = 200;

/**
 * The kept tasks of a run in task order, read in batches, so an export's memory stays flat
 * whatever the dataset size. Each comes with its kept demonstrations (in sample order).
 */
export async function* keptTasks(pool: pg.Pool, runId: string): AsyncGenerator<KeptTask> {
  for (let lastIdx = -1; ;) {
    const { rows } = await pool.query<KeptTask>(
      `SELECT t.task_id, t.run_id, t.idx, t.persona_id, t.instruction, t.tools, t.hidden_context, t.rubric,
              t.workflow, t.provenance, coalesce((
          SELECT json_agg(json_build_object('episode_id', e.episode_id, 'messages', e.messages,
                                            'end_reason', e.end_reason, 'coverage', c.value) ORDER BY e.sample_index)
            FROM episodes e JOIN jsonb_array_elements(t.coverage) c ON c.value ->> 'episodeId' = e.episode_id
           WHERE e.task_id = t.task_id AND (c.value ->> 'kept')::boolean), '[]') AS demonstrations
         FROM tasks t WHERE t.run_id = $1 AND t.stage = 'kept' AND t.idx > $2 ORDER BY t.idx LIMIT $3`,
      [runId, lastIdx, BATCH],
    );
    if (rows.length === 0) return;
    for (const row of rows) yield row;
    lastIdx = rows.at(-1)!.idx;
  }
}

/** How many tasks of a run are kept (what the exports will hold). */
export async function countKeptTasks(pool: pg.Pool, runId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM tasks WHERE run_id = $1 AND stage = 'kept'`,
    [runId],
  );
  return rows[0]!.n;
}
