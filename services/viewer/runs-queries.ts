import type pg from 'pg';
import { RUN_OF_CALL } from '../../activities/llm/spend.js';

/**
 * The run a ledger row belongs to: a synthesis run bills each task's calls to the task's id
 * (`<run>-task-00007`), every other run to its own id.
 */
export const OWNER = RUN_OF_CALL;

/** Model usage of one run by role, from the ledger (each paid call counted once). */
export interface RoleUsageRow {
  readonly role: string;
  readonly calls: number;
  /** Of the calls, those answered in provider batch jobs (at the batch price). */
  readonly batchedCalls: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costUsd: number | null;
}

/** Calls, tokens and (where priced) cost per role of one run. */
export async function usageByRole(pool: pg.Pool, runId: string): Promise<RoleUsageRow[]> {
  const { rows } = await pool.query<{
    role: string;
    calls: number;
    batched: number;
    prompt: number;
    completion: number;
    cost: number | null;
  }>(
    `SELECT coalesce(role, '(none)') AS role, count(*)::int AS calls, count(batch_job_id)::int AS batched,
            coalesce(sum(prompt_tokens), 0)::float8 AS prompt,
            coalesce(sum(completion_tokens), 0)::float8 AS completion, sum(cost_usd)::float8 AS cost
       FROM llm_calls WHERE ${OWNER} = $1 GROUP BY 1 ORDER BY 1`,
    [runId],
  );
  return rows.map((r) => ({
    role: r.role,
    calls: r.calls,
    batchedCalls: r.batched,
    promptTokens: r.prompt,
    completionTokens: r.completion,
    costUsd: r.cost,
  }));
}

/** One row of the runs page. */
export interface RunRow {
  readonly runId: string;
  readonly kind: string;
  readonly state: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** Done and total units (tasks, iterations, cells); total null when the run does not say. */
  readonly done: number;
  readonly total: number | null;
  readonly unit: string;
  readonly calls: number;
  readonly tokens: number;
  /** Money spent on the run's model calls; null while no endpoint of it has prices. */
  readonly costUsd: number | null;
  /** Why the run paused itself (its budget), while it waits. */
  readonly pauseReason: string | null;
}

interface Row {
  run_id: string;
  kind: string;
  status: string;
  pause_reason: string | null;
  created_at: Date;
  updated_at: Date;
  spec: Record<string, unknown>;
  summary: Record<string, unknown> | null;
  tasks_done: number;
  iterations: number;
  cells: number;
  cells_done: number;
  calls: number;
  tokens: number;
}

/**
 * Every run, newest first, with its progress and its model usage from the ledger (each paid call
 * once; answers from the cache cost nothing and are not in it).
 */
export async function listRuns(pool: pg.Pool, limit = 500): Promise<RunRow[]> {
  const { rows } = await pool.query<Row>(
    `SELECT r.run_id, r.kind, r.status, r.pause_reason, r.created_at, r.updated_at, r.spec, r.summary,
            (SELECT count(*)::int FROM tasks t WHERE t.run_id = r.run_id AND t.stage IN ('kept', 'rejected', 'failed')) AS tasks_done,
            (SELECT count(*)::int FROM training_metrics m WHERE m.run_id = r.run_id) AS iterations,
            (SELECT count(*)::int FROM study_cells c WHERE c.study_id = r.run_id) AS cells,
            (SELECT count(*)::int FROM study_cells c WHERE c.study_id = r.run_id AND c.score IS NOT NULL) AS cells_done,
            coalesce(u.calls, 0)::int AS calls, coalesce(u.tokens, 0)::float8 AS tokens
       FROM (SELECT * FROM runs ORDER BY created_at DESC LIMIT $1) r
       -- Per listed run, from the owner index (migration 036): never the whole ledger.
       CROSS JOIN LATERAL (SELECT count(*) AS calls, sum(prompt_tokens + completion_tokens) AS tokens
                             FROM llm_calls WHERE ${OWNER} = r.run_id) u
      ORDER BY r.created_at DESC`,
    [limit],
  );
  const costs = await runCosts(
    pool,
    rows.map((r) => r.run_id),
  );
  return rows.map((r) => ({
    runId: r.run_id,
    kind: r.kind,
    state: r.status,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...progressOf(r),
    calls: r.calls,
    tokens: r.tokens,
    costUsd: costs.get(r.run_id) ?? null,
    pauseReason: r.pause_reason,
  }));
}

/** One run as stored. */
export interface StoredRun {
  readonly runId: string;
  readonly kind: string;
  readonly state: string;
  readonly spec: Record<string, unknown>;
  readonly summary: unknown;
  /** Why the run paused itself (its budget), while it waits. */
  readonly pauseReason: string | null;
}

/** One run's row, or undefined. */
export async function findRun(pool: pg.Pool, runId: string): Promise<StoredRun | undefined> {
  const { rows } = await pool.query<
    Pick<Row, 'run_id' | 'kind' | 'status' | 'spec' | 'summary' | 'pause_reason'>
  >('SELECT run_id, kind, status, spec, summary, pause_reason FROM runs WHERE run_id = $1', [runId]);
  const r = rows[0];
  return (
    r && {
      runId: r.run_id,
      kind: r.kind,
      state: r.status,
      spec: r.spec,
      summary: r.summary,
      pauseReason: r.pause_reason,
    }
  );
}

function progressOf(r: Row): { done: number; total: number | null; unit: string } {
  const specNumber = (key: string) => (typeof r.spec[key] === 'number' ? (r.spec[key] as number) : null);
  switch (r.kind) {
    case 'Synthesis':
      return { done: r.tasks_done, total: specNumber('tasks'), unit: 'tasks' };
    case 'GrpoTraining': {
      const total = r.summary && typeof r.summary.iterations === 'number' ? r.summary.iterations : null;
      return { done: r.iterations, total: r.status === 'completed' ? total : null, unit: 'iterations' };
    }
    case 'SftTraining': {
      // One training_metrics row per applied step; the total is known from the summary once done.
      const total = r.summary && typeof r.summary.steps === 'number' ? r.summary.steps : null;
      return { done: r.iterations, total: r.status === 'completed' ? total : null, unit: 'steps' };
    }
    case 'ScalingStudy':
      return { done: r.cells_done, total: r.cells || null, unit: 'cells' };
    default:
      return { done: r.status === 'completed' ? 1 : 0, total: 1, unit: 'run' };
  }
}

/** Cost per run from the ledger's priced calls; a run none of whose calls was priced has none (unknown, not zero). */
async function runCosts(pool: pg.Pool, runIds: readonly string[]): Promise<Map<string, number>> {
  if (runIds.length === 0) return new Map();
  const { rows } = await pool.query<{ run_id: string; cost: number }>(
    `SELECT ${OWNER} AS run_id, sum(cost_usd)::float8 AS cost FROM llm_calls
      WHERE ${OWNER} = ANY($1) AND cost_usd IS NOT NULL GROUP BY 1`,
    [runIds],
  );
  return new Map(rows.map((r) => [r.run_id, r.cost]));
}
