/**
 * A GRPO run whose rubric judge credits everything (issue 36): its controls find it out, the
 * iteration's metrics and the report say "judge unreliable", and with `onUnreliable: pause` the
 * run pauses itself before its next iteration, naming why, once; resumed, it finishes.
 */
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { resumeSignal, statusQuery } from '../../workflows/controls.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { fixturePolicy, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer, type Rule } from '../../testkit/model-server.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { recordHistory } from '../../testkit/vitest/histories.js';

const SYNTHESIS_RUN = 'synthesis-judge-controls-fixture';

/** Credits every sub-goal and interaction and never flags the forbidden behaviour. */
const CREDULOUS = JSON.stringify({
  forbidden: [{ index: 0, violated: false, evidence: '' }],
  subGoals: [
    { index: 0, achieved: true },
    { index: 1, achieved: true },
  ],
  requiredInteractions: [{ index: 0, satisfied: true }],
});

describe('GRPO with a judge that fails its controls', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let trainer: PythonProcess;
  let dir: string;
  const gpuQueue = `gpu-controls-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-grpo-controls-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: 2 });
    models = await startModelServer({
      script: [
        { role: 'judge-control', reply: CREDULOUS },
        { role: 'policy', reply: 'Record sorted out.' },
        ...(grpoFixtureScript as readonly Rule[]),
      ],
    });
    trainer = startPython(
      'mockworld_trainer.worker',
      [],
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
        MOCKWORLD_CHECKPOINT_DIR: path.join(dir, 'checkpoints'),
        MOCKWORLD_TRAINER_DEVICE: 'cpu',
        DATABASE_URL: db.url,
      },
      /trainer worker:/,
    );
    await trainer.ready;
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await trainer?.kill();
    await models?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('marks the judge unreliable, pauses once before the next iteration, and finishes when resumed', async () => {
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const runId = `grpo-controls-${Date.now()}`;
    const handle = await tw.client.workflow.start('GrpoTraining', {
      args: [
        {
          dataset: { synthesisRunId: SYNTHESIS_RUN },
          policy: fixturePolicy({ baseUrl: models.url, model: 'policy' }),
          judge: role,
          judgeControls: { onUnreliable: 'pause' },
          toolSimulator: role,
          userSimulator: role,
          globalBatch: 1,
          miniBatch: 1,
          rolloutsPerTask: 2,
          maxTurns: 1,
          epochs: 1,
          gpuTaskQueue: gpuQueue,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    // Iteration 0's task: its two controls failed (the empty transcript credited, the violation
    // not flagged). The run holds before iteration 1. It pauses while it records why, just before
    // it counts iteration 0 done, so a query in between sees it paused with 0 done.
    const status = await eventually(async () => {
      const s = await handle.query(statusQuery);
      return s.state === 'paused' && s.done === 1 ? s : undefined;
    }, 120_000);
    const reason =
      'judge unreliable: it graded 0 of 2 control transcripts right (0%, below 90%), so its rewards ' +
      'cannot be believed; give the run a stronger judge (judge.endpoint); resume to go on regardless';
    expect(status).toMatchObject({ done: 1, stage: reason });
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`Paused: ${reason}`);
    const [metrics] = await query<{ metrics: Record<string, unknown> }>(
      db.url,
      'SELECT metrics FROM training_metrics WHERE run_id = $1 AND iteration = 0',
      [runId],
    );
    expect(metrics!.metrics).toMatchObject({
      judgeControls: { controls: 2, passed: 0, passRate: 0, run: { controls: 2, passed: 0 } },
      judge: { controlPassRate: 0, minPassRate: 0.9, unreliable: true },
    });
    const report = await runCli({ DATABASE_URL: db.url, MOCKWORLD_HOME: dir }, 'report', runId);
    expect(report.stdout).toContain('⚠ judge unreliable: it graded 0 of 2 control transcripts right');

    // Resumed, it trains on: iteration 1's task fails its controls too, but whoever resumed has
    // seen why, so it does not pause again.
    await handle.signal(resumeSignal);
    expect(await handle.result()).toMatchObject({ iterations: 2, policyStep: 2, stopped: false });
    const failed = await query<{ n: number }>(
      db.url,
      'SELECT count(*)::int AS n FROM rubric_judge_controls WHERE run_id = $1 AND passed IS NOT TRUE',
      [runId],
    );
    expect(failed[0]!.n).toBe(4);
    await recordHistory(runId, 'grpo-judge-paused');
  });
});
