import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pauseSignal, resumeSignal, statusQuery } from '../../workflows/controls.js';
import { latestMetricsQuery } from '../../workflows/grpo-controls.js';
import { splitHeldOut } from '../../activities/training/sampling.js';
import { listRuns } from '../../services/viewer/runs-queries.js';
import type { SftSummary } from '../../workflows/sft-training.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId } from '../../testkit/grpo-fixture.js';
import { insertFixtureDemonstrations } from '../../testkit/sft-fixture.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const SYNTHESIS_RUN = 'synthesis-sft-fixture';
const TASKS = 4; // 3 trained on, 1 held out
const KEPT_PER_TASK = 2; // and one more per task that was not kept
const EXAMPLES = 4; // of the 3 × 2 = 6 kept demonstrations of the training tasks
const GLOBAL_BATCH = 2;
const EPOCHS = 5;
const STEPS = EPOCHS * (EXAMPLES / GLOBAL_BATCH);

describe('SFT on the teacher demonstrations of a synthesis run', () => {
  let db: TestDatabase;
  let tw: TestWorker;
  let dir: string;
  let trainer: PythonProcess;
  const runId = `sft-e2e-${Date.now()}`;
  const gpuQueue = `gpu-${randomBytes(4).toString('hex')}`;

  const spec = (examples: number) => ({
    kind: 'SftTraining',
    dataset: { synthesisRunId: SYNTHESIS_RUN, heldOutTasks: 1, examples },
    policy: { base: { kind: 'tiny', seed: 0 } },
    epochs: EPOCHS,
    globalBatch: GLOBAL_BATCH,
    learningRate: 1e-2,
    minLearningRate: 1e-3,
    warmupRatio: 0,
    maxSeqLen: 4096,
    gpuTaskQueue: gpuQueue,
  });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-sft-'));
    db = await createTestDatabase();
    await insertFixtureDemonstrations(db.url, {
      synthesisRunId: SYNTHESIS_RUN,
      count: TASKS,
      kept: KEPT_PER_TASK,
    });
    trainer = startPython(
      'mockworld_trainer.worker',
      [],
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
        MOCKWORLD_CHECKPOINT_DIR: path.join(dir, 'checkpoints'),
        MOCKWORLD_TENSORBOARD_DIR: path.join(dir, 'tensorboard'),
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
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const cli = (...args: string[]) =>
    runCli(
      { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: db.url, MOCKWORLD_HOME: dir },
      ...args,
    );

  it('refuses at its start more examples than the run kept, naming dataset.examples', async () => {
    const workflowId = `${runId}-too-many`;
    const failed = await tw.client.workflow
      .execute('SftTraining', { args: [spec(7)], taskQueue: tw.taskQueue, workflowId })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    const messages: string[] = [];
    for (let e: unknown = failed; e instanceof Error; e = e.cause) messages.push(e.message);
    expect(messages.join('\n')).toContain('dataset.examples (7) exceeds the 6 kept demonstrations');
    // Nothing trained: no batch, no step; the run is recorded as failed, saying why.
    expect(await query(db.url, 'SELECT 1 FROM trainer_batches WHERE run_id = $1', [workflowId])).toEqual([]);
    expect(await query(db.url, 'SELECT 1 FROM training_metrics WHERE run_id = $1', [workflowId])).toEqual([]);
    const [row] = await query<{ status: string; summary: { failure: string } }>(
      db.url,
      'SELECT status, summary FROM runs WHERE run_id = $1',
      [workflowId],
    );
    expect(row).toMatchObject({ status: 'failed' });
    expect(row!.summary.failure).toContain('dataset.examples');
  }, 120_000);

  it('refuses a bad spec from the CLI before starting anything, naming every bad field', async () => {
    const file = path.join(dir, 'bad-sft.json');
    const bad = { ...spec(0), globalBatch: 0, policy: { base: { kind: 'huge' } }, steps: 3 };
    await writeFile(file, JSON.stringify(bad));
    const result = await cli('start', file, '--id', `${runId}-invalid`);
    expect(result.code).toBe(2);
    for (const field of ['dataset.examples', 'globalBatch', 'policy.base.kind', 'steps'])
      expect(result.stderr).toContain(field);
  }, 120_000);

  it('trains step by step on the kept demonstrations of the training tasks: the loss falls, a pause holds between steps', async () => {
    const handle = await tw.client.workflow.start('SftTraining', {
      args: [spec(EXAMPLES)],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    const stepsDone = async () =>
      (
        await query<{ n: number }>(
          db.url,
          'SELECT count(*)::int AS n FROM training_metrics WHERE run_id = $1',
          [runId],
        )
      )[0]!.n;
    await eventually(async () => (await stepsDone()) >= 1, 120_000);
    await handle.signal(pauseSignal);
    await eventually(async () => (await handle.query(statusQuery)).state === 'paused');
    const heldAt = await eventually(async () => {
      const status = await handle.query(statusQuery);
      return /done$/.test(status.stage) && status.done; // the step in flight has finished
    }, 120_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await stepsDone()).toBe(heldAt);
    expect(await handle.query(statusQuery)).toMatchObject({ state: 'paused', done: heldAt, total: STEPS });
    expect(heldAt).toBeLessThan(STEPS);
    await handle.signal(resumeSignal);

    const summary = (await handle.result()) as SftSummary;
    expect(summary).toMatchObject({
      steps: STEPS,
      stopped: false,
      dataset: { keptTasks: TASKS, heldOutTasks: 1, demonstrations: 6, examples: EXAMPLES, steps: STEPS },
    });

    // The loss of every step, each on its batch before its update: it falls over the epochs.
    const rows = await query<{ iteration: number; policy_version: string; metrics: Record<string, number> }>(
      db.url,
      'SELECT iteration, policy_version, metrics FROM training_metrics WHERE run_id = $1 ORDER BY iteration',
      [runId],
    );
    expect(rows.map((r) => r.policy_version)).toEqual(
      Array.from({ length: STEPS }, (_, i) => `step-${i + 1}`),
    );
    const losses = rows.map((r) => r.metrics.loss!);
    expect(losses.every((loss) => Number.isFinite(loss) && loss > 0)).toBe(true);
    const epochMean = (epoch: number) => (losses[2 * epoch]! + losses[2 * epoch + 1]!) / 2;
    expect(epochMean(EPOCHS - 1)).toBeLessThan(epochMean(0) - 0.5); // nats per assistant token
    expect(summary.firstLoss).toBe(losses[0]);
    expect(summary.lastLoss).toBe(losses.at(-1));

    // What was trained on: EXAMPLES kept demonstrations of training tasks, each once per epoch;
    // never the held-out task's, never a demonstration the coverage judge did not keep.
    const batches = await query<{ step: number; episode_id: string }>(
      db.url,
      'SELECT step, episode_id FROM trainer_batches WHERE run_id = $1 ORDER BY step, episode_id',
      [runId],
    );
    expect(batches).toHaveLength(EXAMPLES * EPOCHS);
    const trained = [...new Set(batches.map((b) => b.episode_id))];
    expect(trained).toHaveLength(EXAMPLES);
    expect(trained.every((id) => !id.endsWith(`/demo-${KEPT_PER_TASK}`))).toBe(true);
    // The held-out task is GrpoTraining's with the same seed and heldOutTasks.
    const allTasks = Array.from({ length: TASKS }, (_, i) => fixtureTaskId(SYNTHESIS_RUN, i));
    const [heldOut] = splitHeldOut(allTasks, 1, 0).heldOut;
    expect(trained.filter((id) => id.startsWith(`${heldOut}/`))).toEqual([]);
    for (let step = 1; step <= STEPS; step++)
      expect(batches.filter((b) => b.step === step)).toHaveLength(GLOBAL_BATCH);

    // The run as the CLI shows it: the latest step's metrics (a query) and the loss of every step.
    expect(await handle.query(latestMetricsQuery)).toMatchObject({
      step: STEPS,
      policyVersion: `step-${STEPS}`,
    });
    const report = await cli('report', runId);
    expect(report.code).toBe(0);
    expect(report.stdout).toContain(`SftTraining run ${runId}: completed`);
    const table = report.stdout.split('loss per step')[1]!;
    const lines = table.split('\n').filter((line) => /^\s*\d+\s+step-\d/.test(line));
    expect(lines).toHaveLength(STEPS);
    expect(lines[0]!).toContain(losses[0]!.toFixed(4));
    // Checkpoints as GRPO's: every step applied once with its record (kind sft), the last one's
    // weights pinned and servable; the trainer's step metrics in the run's TensorBoard events.
    const run = path.join(dir, 'checkpoints', runId);
    const steps = (await readdir(run)).filter((d) => d.startsWith('step-')).sort();
    expect(steps).toHaveLength(STEPS);
    const last = path.join(run, steps.at(-1)!);
    expect(JSON.parse(await readFile(path.join(last, 'record.json'), 'utf8'))).toMatchObject({ kind: 'sft' });
    expect((await readdir(last)).sort()).toEqual(expect.arrayContaining(['model', 'pinned']));
    const board = path.join(dir, 'tensorboard', runId);
    const events = await Promise.all(
      (await readdir(board))
        .filter((f) => f.startsWith('events.out.tfevents.'))
        .map((f) => readFile(path.join(board, f), 'latin1')),
    );
    expect(events.join('')).toContain('trainer.loss');
    // The viewer's list of runs counts its steps.
    const pool = new pg.Pool({ connectionString: db.url });
    try {
      const listed = (await listRuns(pool)).find((r) => r.runId === runId);
      expect(listed).toMatchObject({
        kind: 'SftTraining',
        state: 'completed',
        done: STEPS,
        total: STEPS,
        unit: 'steps',
      });
    } finally {
      await pool.end();
    }
    await recordHistory(runId, 'sft-training-paused-resumed');
  }, 600_000);
});
