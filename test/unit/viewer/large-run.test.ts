import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_OF_CALL, runSpend } from '../../../activities/llm/spend.js';
import { createViewerApp } from '../../../services/viewer/app.js';
import { usageByRole } from '../../../services/viewer/runs-queries.js';
import { TASK_PAGE } from '../../../services/viewer/synthesis-queries.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';

const RUN = 'synthesis-large';
const TASKS = TASK_PAGE * 2 + 34;

/**
 * What keeps a run of 100,000 tasks as quick to look at as one of 100 (bench/scale.ts measures
 * it): the task list is paged by index, a run's spend and usage come from a rollup the ledger's
 * inserts keep, and what still reads one run's ledger rows finds them by the owner index.
 */
describe('a large synthesis run in the viewer and the ledger', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase('mw_large_run');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    await query(
      db.url,
      `INSERT INTO runs (run_id, kind, spec, status) VALUES ($1, 'Synthesis', '{}', 'completed')`,
      [RUN],
    );
    await query(
      db.url,
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage)
       SELECT $1 || '-task-' || lpad(i::text, 5, '0'), $1, i, 'p' || i, CASE WHEN i % 3 = 0 THEN 'rejected' ELSE 'kept' END
         FROM generate_series(0, $2::int - 1) AS i`,
      [RUN, TASKS],
    );
    await query(
      db.url,
      `INSERT INTO llm_calls (cache_key, endpoint, model, request_hash, sample_index, policy_version, run_id, role,
                              response, latency_ms, upstream_attempts, cost_usd)
       SELECT 'k' || i, 'http://m/v1', 'm', 'h' || i, 0, 'base', $1 || '-task-' || lpad(i::text, 5, '0'), 'teacher',
              '{}', 1, 1, 0.5
         FROM generate_series(0, 9) AS i`,
      [RUN],
    );
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const app = () => createViewerApp({ pool, ui: { url: 'http://localhost:8233', namespace: 'default' } });
  const taskLinks = (page: string) =>
    [...page.matchAll(/href="\/tasks\/[^"]+">(\d+)</g)].map((m) => Number(m[1]));

  it('pages the task list by index, every task exactly once', async () => {
    const seen: number[] = [];
    let url: string | undefined = `/runs/${RUN}`;
    while (url) {
      const response = await app().request(url);
      expect(response.status).toBe(200);
      const page = await response.text();
      expect(page).toContain(`Tasks (${TASKS})`);
      const links = taskLinks(page);
      expect(links.length).toBeLessThanOrEqual(TASK_PAGE);
      seen.push(...links);
      url = /href="([^"]*after=\d+[^"]*)"/.exec(page)?.[1]?.replaceAll('&amp;', '&');
    }
    expect(seen).toEqual(Array.from({ length: TASKS }, (_, i) => i));
  });

  it('keeps the stage filter while paging', async () => {
    const page = await (await app().request(`/runs/${RUN}?stage=rejected&after=1000`)).text();
    expect(taskLinks(page)).toEqual(Array.from({ length: 11 }, (_, i) => 1002 + 3 * i));
  });

  it("keeps each run's usage in a rollup that matches its ledger", async () => {
    const insert = (from: number, to: number, cost: string) =>
      query(
        db.url,
        `INSERT INTO llm_calls (cache_key, endpoint, model, request_hash, sample_index, policy_version, run_id, role,
                                response, latency_ms, upstream_attempts, prompt_tokens, cost_usd)
         SELECT 'k' || i, 'http://m/v1', 'm', 'h' || i, 0, 'base', $1 || '-task-' || lpad(i::text, 5, '0'),
                CASE WHEN i % 2 = 0 THEN 'teacher' END, '{}', 1, 1, 3, ${cost}
           FROM generate_series($2::int, $3::int) AS i
         ON CONFLICT (cache_key) DO NOTHING`,
        [RUN, from, to],
      );
    await insert(5, 19, '0.25'); // 5..9 are already stored: not counted again
    await insert(20, 23, 'NULL'); // unpriced calls count, their cost is unknown
    await Promise.all([insert(24, 40, '0.25'), insert(30, 60, '0.25')]); // concurrent, overlapping
    const fromLedger = await query<{ role: string; calls: number; cost: number | null; prompt: number }>(
      db.url,
      `SELECT coalesce(role, '(none)') AS role, count(*)::int AS calls, sum(cost_usd)::float8 AS cost,
              sum(prompt_tokens)::float8 AS prompt
         FROM llm_calls WHERE ${RUN_OF_CALL} = $1 GROUP BY 1 ORDER BY 1`,
      [RUN],
    );
    const usage = await usageByRole(pool, RUN);
    expect(
      usage.map((u) => ({ role: u.role, calls: u.calls, cost: u.costUsd, prompt: u.promptTokens })),
    ).toEqual(fromLedger);
    expect(await runSpend(pool, RUN)).toEqual({ costUsd: 5 + 0.25 * (10 + 37), calls: 61 });
  });

  it("reads one run's ledger rows through the owner index", async () => {
    const client = await pool.connect();
    try {
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query(
        `EXPLAIN SELECT DISTINCT role FROM llm_calls WHERE ${RUN_OF_CALL} = $1`,
        [RUN],
      );
      expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('llm_calls_owner_role');
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  });
});
