import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pauseSignal, resumeSignal, statusQuery } from '../../workflows/controls.js';
import { latestMetricsQuery } from '../../workflows/grpo-controls.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { fixturePolicy, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const SYNTHESIS_RUN = 'synthesis-fixture';
const TASKS = 3; // 2 trained on, 1 held out

describe('GRPO training in the mock world', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let trainer: PythonProcess;
  let policy: PythonProcess;
  const runId = `grpo-e2e-${Date.now()}`;
  const gpuQueue = `gpu-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-grpo-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: TASKS });
    models = await startModelServer({ script: grpoFixtureScript });
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
      MOCKWORLD_CHECKPOINT_DIR: path.join(dir, 'checkpoints'),
      MOCKWORLD_TENSORBOARD_DIR: path.join(dir, 'tensorboard'),
      MOCKWORLD_TRAINER_DEVICE: 'cpu',
      DATABASE_URL: db.url,
    };
    trainer = startPython('mockworld_trainer.worker', [], env, /trainer worker:/);
    policy = startPython(
      'mockworld_trainer.policy_server',
      ['--run-id', runId, '--port', '0', '--base', 'tiny', '--default-max-tokens', '32'],
      env,
      /policy server for run/,
    );
    await Promise.all([trainer.ready, policy.ready]);
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await trainer?.kill();
    await policy?.kill();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs 3 iterations, one trainer step each, policy version up once per iteration, holding while paused', async () => {
    const policyUrl = /(http:\/\/\S+\/v1)/.exec(await policy.ready)![1]!;
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const handle = await tw.client.workflow.start('GrpoTraining', {
      args: [
        {
          dataset: { synthesisRunId: SYNTHESIS_RUN, heldOutTasks: 1 },
          policy: fixturePolicy({ baseUrl: policyUrl, model: 'policy' }),
          judge: role,
          toolSimulator: role,
          userSimulator: role,
          globalBatch: 2,
          miniBatch: 2,
          evaluateEvery: 2,
          rolloutsPerTask: 4,
          maxTurns: 2,
          learningRate: 1e-3,
          epochs: 3,
          gpuTaskQueue: gpuQueue,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    // Pause mid-run: it holds at the next iteration boundary, and no trainer step happens while paused.
    const iterationsDone = async () => {
      const sql = new pg.Client({ connectionString: db.url });
      await sql.connect();
      try {
        return (await sql.query('SELECT count(*)::int AS n FROM training_metrics WHERE run_id = $1', [runId]))
          .rows[0].n;
      } finally {
        await sql.end();
      }
    };
    await eventually(async () => (await iterationsDone()) >= 1, 120_000);
    await handle.signal(pauseSignal);
    await eventually(async () => (await handle.query(statusQuery)).state === 'paused');
    const heldAt = await eventually(async () => {
      const status = await handle.query(statusQuery);
      return /done$/.test(status.stage) && status.done; // the iteration in flight has finished
    }, 120_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await iterationsDone()).toBe(heldAt);
    expect((await handle.query(statusQuery)).done).toBe(heldAt);
    expect(heldAt).toBeLessThan(3);
    await handle.signal(resumeSignal);

    const summary = await handle.result();
    expect(summary).toMatchObject({ iterations: 3, policyStep: 3, stopped: false });
    let trainedTaskOfIteration1 = '';

    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      const metrics = await sql.query(
        'SELECT iteration, policy_version, metrics FROM training_metrics WHERE run_id = $1 ORDER BY iteration',
        [runId],
      );
      expect(metrics.rows.map((r) => ({ iteration: r.iteration, policy_version: r.policy_version }))).toEqual(
        [
          { iteration: 0, policy_version: 'step-1' },
          { iteration: 1, policy_version: 'step-2' },
          { iteration: 2, policy_version: 'step-3' },
        ],
      );
      // Held-out evaluation after every 2nd iteration, on the task never trained on.
      expect(metrics.rows.map((r) => r.metrics.evaluation?.episodes ?? null)).toEqual([null, 1, null]);
      expect(metrics.rows[1].metrics.evaluation.rewardMean).toEqual(expect.any(Number));
      trainedTaskOfIteration1 = (
        await sql.query(`SELECT task_id FROM episodes WHERE starts_with(episode_id, $1) LIMIT 1`, [
          `${runId}/it1/`,
        ])
      ).rows[0].task_id;
      // Rollouts of iteration i were sampled from policy version step-i.
      const rollouts = await sql.query(
        `SELECT policy_version, count(*)::int AS n FROM episodes WHERE purpose = 'rollout' GROUP BY 1 ORDER BY 1`,
      );
      expect(rollouts.rows).toEqual([
        { policy_version: 'step-0', n: 2 * 4 },
        { policy_version: 'step-1', n: 2 * 4 },
        { policy_version: 'step-2', n: 2 * 4 },
      ]);
    } finally {
      await sql.end();
    }
    expect(await handle.query(latestMetricsQuery)).toMatchObject({ policyVersion: 'step-3' });

    // The same, from the CLI: the latest metrics and the tasks of the iteration (queries), and the
    // metrics of every iteration (PostgreSQL, no worker needed).
    const cli = (...args: string[]) =>
      runCli(
        { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: db.url, MOCKWORLD_HOME: dir },
        ...args,
      );
    const latest = JSON.parse((await cli('status', runId, '--metrics', '--json')).stdout);
    expect(latest.metrics).toMatchObject({ iteration: 2, policyVersion: 'step-3' });
    // The fixture judge is honest on its controls: 2 per task (empty, violation), all passed.
    expect(latest.metrics.judgeControls).toMatchObject({ controls: 4, passed: 4, passRate: 1 });
    expect(latest.metrics.judge).toMatchObject({ controlPassRate: 1, unreliable: false, reason: null });
    const tasks = await cli('status', runId, '--tasks');
    expect(tasks.stdout.match(/ judged/g)).toHaveLength(2);
    const report = await cli('report', runId);
    expect(report.code).toBe(0);
    const table = report.stdout.split('metrics per iteration')[1]!;
    expect(table).toMatch(
      /sampled from\s+trained to\s+reward\s.*clip frac.*held-out reward\s+judge controls/,
    );
    expect(report.stdout).toContain('judge controls: 100% passed (at least 90% needed)');
    const rows = table.split('\n').filter((line) => /^\s*\d+\s+step-\d/.test(line));
    expect(rows.map((line) => line.trim().split(/\s+/).slice(0, 3))).toEqual([
      ['0', 'step-0', 'step-1'],
      ['1', 'step-1', 'step-2'],
      ['2', 'step-2', 'step-3'],
    ]);
    for (const line of rows) expect(line).toMatch(/\d\.\d{3} ± \d\.\d{3}/); // reward mean ± std
    const plot = /reward curve: (\S+)/.exec(report.stdout)![1]!;
    expect(plot).toBe(path.join(dir, 'training', runId, 'reward.svg'));
    expect(
      (await readFile(plot, 'utf8')).match(/aria-roledescription="point"/g)!.length,
    ).toBeGreaterThanOrEqual(3);

    // Experiment tracking: the run's TensorBoard events hold the trainer's step metrics and the
    // iteration metrics the viewer shows (tags are stored as plain strings), each step written once.
    const board = path.join(dir, 'tensorboard', runId);
    const eventFiles = (await readdir(board)).filter((f) => f.startsWith('events.out.tfevents.'));
    expect(eventFiles.length).toBeGreaterThan(0);
    const events = (await Promise.all(eventFiles.map((f) => readFile(path.join(board, f), 'latin1')))).join(
      '',
    );
    for (const tag of [
      'trainer.loss',
      'trainer.clip_frac',
      'rewardMean',
      'subGoalFraction',
      'evaluation.rewardMean',
    ])
      expect(events).toContain(tag);
    expect((await readdir(path.join(board, '.tracked'))).sort()).toEqual([
      'iteration-00000001',
      'iteration-00000002',
      'iteration-00000003',
      'iteration-config',
      'trainer-00000001',
      'trainer-00000002',
      'trainer-00000003',
      'trainer-config',
    ]);
    await recordHistory(runId, 'grpo-training-3-iterations');
    await recordHistory(`${runId}-it1-${trainedTaskOfIteration1}`, 'grpo-group-one-activity');
  });
});
