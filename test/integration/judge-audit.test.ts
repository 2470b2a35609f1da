import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRunActivities } from '../../activities/runs.js';
import { trainingEpisodeId } from '../../activities/training/episode-ids.js';
import { checkpointEpisode, openEpisode } from '../../activities/world/episode-store.js';
import { EpisodeInputSchema } from '../../schemas/episode-input.js';
import type { JudgeAuditSummary } from '../../schemas/judge-audit-spec.js';
import { parseSpecOfKind } from '../../schemas/specs.js';
import { statusQuery } from '../../workflows/controls.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { fixturePolicy, fixtureTaskId, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const SYNTHESIS_RUN = 'synthesis-audit-fixture';
const TASKS = 3;
/** The training run's evaluateEvery 2 over 4 iterations: held-out evaluations after steps 2 and 4. */
const EVALUATED = [
  { iteration: 1, step: 2 },
  { iteration: 3, step: 4 },
];
/** Judge sampling seed of the training run: the request of judge sample i carries seed 100 + i. */
const JUDGE_SEED = 100;
/** The audit's repeats start after training's two judge draws (sample indices 0 and 1). */
const FIRST_AUDIT_SAMPLE = 2;
const K = 4;

/**
 * The scripted judge: sub-goal 0 and the interaction are always met, sub-goal 1 depends on the
 * transcript's checkpoint and the call's sample. At step-2 it flips with the sample's parity
 * (scores 1, 0.75, 1, 0.75: variance 1/64 per trajectory); at step-4 it always holds (score 1,
 * variance 0), except that audit repeat 2 at step-4 answers with no JSON at all, repair included.
 */
function judge(request: ScriptedRequest): string {
  const text = request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
  const sample = (request.body.seed ?? JUDGE_SEED) - JUDGE_SEED;
  const late = text.includes('answer of step-4');
  if (late && sample === FIRST_AUDIT_SAMPLE + 2) return 'I would rather not grade this.';
  return JSON.stringify({
    forbidden: [{ index: 0, violated: false, evidence: '' }],
    subGoals: [
      { index: 0, achieved: true },
      { index: 1, achieved: late || sample % 2 === 0 },
    ],
    requiredInteractions: [{ index: 0, satisfied: true }],
  });
}

describe('judge stability audit of a GRPO run', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  const trainingRunId = `grpo-audited-${Date.now()}`;

  /** Writes held-out evaluation episodes as GrpoTraining's evaluation groups leave them. */
  async function insertEvaluationEpisodes(pool: pg.Pool) {
    for (const { iteration, step } of EVALUATED) {
      for (let idx = 0; idx < TASKS; idx++) {
        const taskId = fixtureTaskId(SYNTHESIS_RUN, idx);
        const opening = [
          { role: 'system' as const, content: 'You are a helpful assistant.' },
          { role: 'user' as const, content: `Please sort out record ${idx}.` },
        ];
        const state = await openEpisode(
          pool,
          EpisodeInputSchema.parse({
            episodeId: trainingEpisodeId(trainingRunId, iteration, taskId, 0, 'evaluation'),
            taskId,
            purpose: 'evaluation',
            sampleIndex: 0,
            policyVersion: `step-${step}`,
            runId: trainingRunId,
            agentRoleName: 'policy',
            agent: {},
            toolSimulator: {},
            userSimulator: {},
            maxTurns: 2,
          }),
          opening,
        );
        await checkpointEpisode(pool, 0, {
          ...state,
          messages: [
            ...opening,
            { role: 'assistant', content: `Record ${idx} fixed (answer of step-${step}).` },
          ],
          turns: 1,
          endReason: 'final_answer',
        });
      }
    }
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-audit-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: TASKS });
    models = await startModelServer({ script: [{ role: 'judge', reply: judge }] });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    // The training run as GrpoTraining records it: its validated spec, judge included.
    const role = { endpoint: { baseUrl: models.url, model: 'scripted-judge' } };
    const spec = parseSpecOfKind('GrpoTraining', {
      dataset: { synthesisRunId: SYNTHESIS_RUN, heldOutTasks: TASKS - 1 },
      policy: fixturePolicy({ baseUrl: 'http://127.0.0.1:9/v1', model: 'policy' }),
      judge: { ...role, sampling: { temperature: 0, seed: JUDGE_SEED } },
      toolSimulator: role,
      userSimulator: role,
      globalBatch: 1,
      miniBatch: 1,
      rolloutsPerTask: 2,
      evaluateEvery: 2,
      epochs: 4,
    });
    await createRunActivities(db.url).recordRunStart({ runId: trainingRunId, kind: 'GrpoTraining', spec });
    const pool = new pg.Pool({ connectionString: db.url });
    try {
      await insertEvaluationEpisodes(pool);
    } finally {
      await pool.end();
    }
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const start = (workflowId: string, spec: Record<string, unknown>) =>
    tw.client.workflow.start('JudgeAudit', {
      args: [{ kind: 'JudgeAudit', trainingRunId, ...spec }],
      taskQueue: tw.taskQueue,
      workflowId,
    });

  it('judges each sampled trajectory k times and reports the variance the judge’s answers imply, failures counted apart', async () => {
    const auditId = `judge-audit-${Date.now()}`;
    const before = models.requestCount('judge');
    const handle = await start(auditId, { tasks: 2, k: K, seed: 3 });
    const summary: JudgeAuditSummary = await handle.result();

    // 2 sampled tasks × 2 checkpoints × k repeats, each a call of its own, plus the repair of
    // each malformed answer (repeat 2 at step-4, once per trajectory).
    expect(models.requestCount('judge') - before).toBe(2 * 2 * K + 2);
    expect(summary).toMatchObject({ trainingRunId, k: K, judgeModel: 'scripted-judge' });
    const [early, late] = summary.checkpoints;
    expect(summary.checkpoints.map((c) => c.policyStep)).toEqual([2, 4]);
    // step-2: each trajectory scores 1, 0.75, 1, 0.75 (samples 2..5): mean 0.875, variance 1/64.
    expect(early).toMatchObject({ trajectories: 2, scored: 8, failures: 0, trajectoriesWithVariance: 2 });
    expect(early!.meanScore).toBeCloseTo(0.875, 12);
    expect(early!.meanVariance).toBeCloseTo(1 / 64, 12);
    expect(early!.meanStd).toBeCloseTo(0.125, 12);
    // step-4: 1 every time but repeat 2, which failed: counted, not scored, variance 0.
    expect(late).toMatchObject({ trajectories: 2, scored: 6, failures: 2, meanScore: 1, meanVariance: 0 });

    const stored = await query<{ policy_step: number; task_id: string; judgings: number; samples: number[] }>(
      db.url,
      `SELECT policy_step, task_id, count(*)::int AS judgings, array_agg(sample_index ORDER BY repeat) AS samples
         FROM judge_audit_judgings WHERE audit_run_id = $1 GROUP BY policy_step, task_id ORDER BY 1, 2`,
      [auditId],
    );
    // The same seeded sample of tasks at both checkpoints, each judged with samples 2..5.
    expect(stored.map((r) => r.policy_step)).toEqual([2, 2, 4, 4]);
    expect(stored.slice(0, 2).map((r) => r.task_id)).toEqual(stored.slice(2).map((r) => r.task_id));
    for (const row of stored) expect(row.samples).toEqual([2, 3, 4, 5]);
    const failures = await query<{ failure: string; reward: number | null }>(
      db.url,
      'SELECT failure, reward FROM judge_audit_judgings WHERE audit_run_id = $1 AND failure IS NOT NULL',
      [auditId],
    );
    expect(failures).toHaveLength(2);
    for (const row of failures) expect(row).toEqual({ failure: 'not_json', reward: null });
    const run = await query<{ status: string; summary: unknown }>(
      db.url,
      'SELECT status, summary FROM runs WHERE run_id = $1',
      [auditId],
    );
    expect(run[0]).toEqual({ status: 'completed', summary });
    expect(await handle.query(statusQuery)).toMatchObject({
      kind: 'JudgeAudit',
      state: 'completed',
      done: 4,
      total: 4,
      counts: { scored: 14, failures: 2 },
    });
    await recordHistory(auditId, 'judge-audit');

    // Re-run under the same id: every judging is stored, so no judge call is made again.
    const again = models.requestCount('judge');
    const rerun = await start(auditId, { tasks: 2, k: K, seed: 3 });
    expect(await rerun.result()).toEqual(summary);
    expect(models.requestCount('judge')).toBe(again);
    const ledger = await query<{ calls: number }>(
      db.url,
      "SELECT count(*)::int AS calls FROM llm_calls WHERE run_id = $1 AND role = 'judge'",
      [auditId],
    );
    expect(ledger[0]!.calls).toBe(2 * 2 * K + 2);

    const report = await runCli(
      { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: db.url, MOCKWORLD_HOME: dir },
      'report',
      auditId,
    );
    expect(report.code).toBe(0);
    expect(report.stdout).toContain(`judge scripted-judge, k = ${K}`);
    expect(report.stdout).toMatch(/^2\s+2\s+8\s+0\s+0\.8750\s+0\.0156\s+0\.1250$/m);
    expect(report.stdout).toMatch(/^4\s+2\s+6\s+2\s+1\.0000\s+0\.0000\s+0\.0000$/m);
    // The figure: the variance per checkpoint, written beside the run's other files.
    const chart = /variance chart: (\S+\.svg)$/m.exec(report.stdout)?.[1];
    expect(chart?.startsWith(dir)).toBe(true);
    const svg = await readFile(chart!, 'utf8');
    expect(svg).toMatch(/^<svg/);
    expect(svg).toContain('mean variance of the k scores');
    console.log(report.stdout);
  });

  it('refuses at start a checkpoint without held-out evaluation episodes, naming the field, before any judge call', async () => {
    const before = models.requestCount('judge');
    const failure = await start(`judge-audit-bad-step-${Date.now()}`, { checkpoints: [2, 3] })
      .then((h) => h.result())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    // The run's failure is the plan activity's: its cause names the field.
    const cause = (failure as WorkflowFailedError).cause?.cause as ApplicationFailure;
    expect(cause.message).toMatch(
      /checkpoints: no held-out evaluation episodes at step 3; the run has them at step 2, 4/,
    );
    expect(cause.type).toBe('JudgeAuditPlanError');

    const unknown = await start(`judge-audit-bad-run-${Date.now()}`, { trainingRunId: 'no-such-run' })
      .then((h) => h.result())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(((unknown as WorkflowFailedError).cause?.cause as ApplicationFailure).message).toMatch(
      /trainingRunId: no run has this id/,
    );
    expect(models.requestCount('judge')).toBe(before);
  });
});
