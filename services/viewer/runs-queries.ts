import type pg from 'pg';

/** Model usage of one run by role. */
export interface RoleUsageRow {
  readonly role: string;
  readonly calls: number;
  /** Of the calls, those answered in provider batch jobs (at the batch price). */
  readonly batchedCalls: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costUsd: number | null;
}

/**
 * Calls, tokens and (where priced) cost per role of one run, from the ledger's rollup (migration
 * 036; each paid call counted once).
 */
export async function usageByRole(pool: pg.Pool, runId: string): Promise<RoleUsageRow[]> {
  const { rows } = await pool.query<{
    role: string;
    calls: number;
    batched: number;
    prompt: number;
    completion: number;
    cost: number | null;
  }>(
    `SELECT role, calls::int AS calls, batched_calls::int AS batched, prompt_tokens::float8 AS prompt,
            completion_tokens::float8 AS completion, CASE WHEN priced_calls > 0 THEN cost_usd END AS cost
       FROM llm_usage WHERE owner_run_id = $1 ORDER BY role`,
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
  cost: number | null;
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
            coalesce(u.calls, 0)::int AS calls, coalesce(u.tokens, 0)::float8 AS tokens, u.cost
       FROM (SELECT * FROM runs ORDER BY created_at DESC LIMIT $1) r
       -- The usage rollup (migration 036): a few rows per run, whatever the size of its ledger.
       LEFT JOIN LATERAL (SELECT sum(calls) AS calls, sum(prompt_tokens + completion_tokens) AS tokens,
                                 CASE WHEN sum(priced_calls) > 0 THEN sum(cost_usd) END AS cost
                            FROM llm_usage WHERE owner_run_id = r.run_id) u ON true
      ORDER BY r.created_at DESC`,
    [limit],
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
    costUsd: r.cost,
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
