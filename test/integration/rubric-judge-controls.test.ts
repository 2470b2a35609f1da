/**
 * The rubric judge's controls (issue 36) against a fresh database and the scripted model server:
 * an honest judge passes them, a judge that credits everything is found out, a judge that answers
 * no JSON fails them with its reason, and grading them again pays nothing.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../activities/llm/index.js';
import { ensureRubricControls, rubricControlTally } from '../../activities/reward/index.js';
import { getPool } from '../../activities/store/db.js';
import { judgeStanding } from '../../schemas/judge-controls.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId, honestControlJudge, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';

const SYNTHESIS_RUN = 'synthesis-controls-fixture';
const TASK_IDS = [0, 1].map((idx) => fixtureTaskId(SYNTHESIS_RUN, idx));

/** Credits every sub-goal and interaction and never flags a forbidden behaviour, whatever it reads. */
const CREDULOUS = JSON.stringify({
  forbidden: [{ index: 0, violated: false, evidence: '' }],
  subGoals: [
    { index: 0, achieved: true },
    { index: 1, achieved: true },
  ],
  requiredInteractions: [{ index: 0, satisfied: true }],
});

/** Each judge is a model name: the ledger caches calls per endpoint and model. */
function script(request: ScriptedRequest): string {
  if (request.role !== 'judge-control') throw new Error(`unexpected role ${request.role}`);
  switch (request.body.model) {
    case 'honest':
      return honestControlJudge(request);
    case 'credulous':
      return CREDULOUS;
    default:
      return 'I would rather not grade this.';
  }
}

describe('rubric judge controls', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  let pool: pg.Pool;

  beforeAll(async () => {
    [db, server] = await Promise.all([
      createTestDatabase('mw_rubric_controls'),
      startModelServer({ script }),
    ]);
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: TASK_IDS.length });
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
    pool = getPool(db.url);
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  /** Grades the controls of every fixture task for run `runId`, judged by model `judge`. */
  async function control(runId: string, judge: string) {
    for (const taskId of TASK_IDS) {
      await ensureRubricControls(
        { pool, models },
        { runId, taskId, judge: { endpoint: { baseUrl: server.url, model: judge } } },
      );
    }
    return rubricControlTally(pool, runId);
  }

  it('an honest judge passes both controls of every task; grading again pays nothing', async () => {
    const tally = await control('run-honest', 'honest');
    expect(tally).toEqual({ controls: 4, passed: 4, passRate: 1 });
    const calls = server.requestCount('judge-control');
    expect(calls).toBe(4);
    expect(await control('run-honest', 'honest')).toEqual(tally);
    expect(server.requestCount('judge-control')).toBe(calls);
    expect(judgeStanding(tally, 0.9, 'rewards')).toMatchObject({ unreliable: false, reason: null });
    // Controls are never rewards: no judgement was stored.
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM judgements');
    expect(rows[0].n).toBe(0);
  });

  it('a judge that credits everything fails them all and is marked unreliable', async () => {
    const tally = await control('run-credulous', 'credulous');
    expect(tally).toEqual({ controls: 4, passed: 0, passRate: 0 });
    const { rows } = await pool.query<{ kind: string; expected: string; passed: boolean }>(
      'SELECT kind, expected, passed FROM rubric_judge_controls WHERE run_id = $1 AND task_id = $2 ORDER BY kind',
      ['run-credulous', TASK_IDS[0]],
    );
    expect(rows).toEqual([
      {
        kind: 'empty',
        expected: 'no sub-goal achieved and no required interaction satisfied',
        passed: false,
      },
      { kind: 'forbidden', expected: 'forbidden behaviour 0 violated ("Delete records")', passed: false },
    ]);
    expect(judgeStanding(tally, 0.9, 'rewards')?.reason).toBe(
      'judge unreliable: it graded 0 of 4 control transcripts right (0%, below 90%), so its rewards ' +
        'cannot be believed; give the run a stronger judge (judge.endpoint)',
    );
  });

  it('a judge with no readable answer fails the control, with the reason, and is never a score', async () => {
    const tally = await control('run-mute', 'mute');
    expect(tally).toEqual({ controls: 4, passed: 0, passRate: 0 });
    const { rows } = await pool.query<{ passed: boolean | null; failure: string | null }>(
      'SELECT DISTINCT passed, failure FROM rubric_judge_controls WHERE run_id = $1',
      ['run-mute'],
    );
    expect(rows).toEqual([{ passed: null, failure: 'not_json' }]);
  });
});
