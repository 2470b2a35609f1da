import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalBenchmarkTrial } from '../../../activities/evaluation/local-benchmark.js';
import { createModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { REPO_ROOT } from '../../../deploy/paths.js';
import type { LocalTrialInput } from '../../../schemas/local-benchmark-trial.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';

/**
 * The wall-clock bound of a trial on the CPU worker (activities/evaluation/trial-deadline.ts): a
 * model that never answers ends the trial at the bound, stored with the reason; a cancelled
 * activity stores nothing. The Python worker's tau2 and BFCL trials have their own test
 * (workers/evaluation/tests/test_activities.py).
 */
describe('a trial bounded by its wall-clock limit', () => {
  let db: TestDatabase;
  let server: ModelServer;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_trial_bound'), startModelServer()]);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });

  const trial = (evaluationId: string, wallSeconds: number): LocalTrialInput => ({
    benchmark: 'exact',
    evaluationId,
    group: 'exact-sample',
    taskId: 'capital-france',
    trial: 0,
    trials: 1,
    path: path.join(REPO_ROOT, 'examples', 'evaluation', 'exact-sample.jsonl'),
    policy: { baseUrl: server.url, model: 'hung-policy' },
    sampling: { temperature: 0 },
    settings: {},
    wallSeconds,
  });
  const deps = (signal?: AbortSignal) => ({
    pool: getPool(db.url),
    models: createModelClient({ databaseUrl: db.url }),
    signal,
  });

  it('ends a trial whose model never answers at its bound, stored with the reason, and never runs it again', async () => {
    server.injectFaults({ kind: 'hang' });
    const started = Date.now();
    const summary = await runLocalBenchmarkTrial(deps(), trial('bound-hung', 2));
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(summary).toMatchObject({ reward: 0, termination: 'time_limit', stored: false });
    expect(summary.failure).toContain('wall-clock bound of 2 s');
    expect(summary.failure).toContain('trialTimeoutMinutes');
    const requests = server.stats.total;
    expect(requests).toBeGreaterThan(0);
    expect(await runLocalBenchmarkTrial(deps(), trial('bound-hung', 2))).toEqual({
      ...summary,
      stored: true,
    });
    expect(server.stats.total).toBe(requests);
  });

  it('stores nothing when the activity is cancelled before the bound: the cancellation is thrown', async () => {
    server.injectFaults({ kind: 'hang' });
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(new Error('activity cancelled')), 300);
    await expect(runLocalBenchmarkTrial(deps(cancel.signal), trial('bound-cancelled', 60))).rejects.toThrow();
    expect(await query(db.url, `SELECT 1 FROM eval_trials WHERE evaluation_id = 'bound-cancelled'`)).toEqual(
      [],
    );
  });
});
