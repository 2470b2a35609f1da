import type pg from 'pg';

/**
 * The run a ledger row belongs to, in SQL: a synthesis run bills each task's calls to the task's
 * id (`<run>-task-00007`), every other run to its own id. Migration 036 indexes this exact
 * expression (a query that compares it with a run id reads only that run's rows) and sums the
 * ledger by it in `llm_usage`.
 */
export const RUN_OF_CALL = `regexp_replace(run_id, '-task-[0-9]+$', '')`;

/**
 * What a run has spent: the sum of its paid calls' costs in the ledger, read from its rollup
 * (`llm_usage`, kept by a trigger on every ledger insert: a few rows per run, so a budgeted run's
 * check before each task costs the same at task 100,000 as at task 1). Each answer is a row once
 * (a retried or resumed activity finds its answer and pays nothing), so a worker killed and
 * replaced never makes this count anything twice.
 */
export async function runSpend(pool: pg.Pool, runId: string): Promise<{ costUsd: number; calls: number }> {
  const { rows } = await pool.query<{ cost: number; calls: number }>(
    `SELECT coalesce(sum(cost_usd), 0)::float8 AS cost, coalesce(sum(calls), 0)::int AS calls
       FROM llm_usage WHERE owner_run_id = $1`,
    [runId],
  );
  return { costUsd: rows[0]!.cost, calls: rows[0]!.calls };
}
