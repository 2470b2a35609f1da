import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { EvaluationSummary } from '../../workflows/evaluation.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { evalReplayScript } from '../../testkit/eval-replay.js';
import { replayPlans, startEvalWorker, type EvalWorkerProcess } from '../../testkit/eval-worker.js';
import { fixturePolicy, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import {
  startModelServer,
  type ModelServer,
  type Reply,
  type ScriptedRequest,
} from '../../testkit/model-server.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const SYNTHESIS_RUN = 'synthesis-fixture';
const ENTRY = 'multi_turn_base_0';

/**
 * Benchmarks inside training (issue 15 point 4): a 2-iteration GrpoTraining on the GRPO fixture
 * (trainer and policy server on CPU) with `benchmarks.every: 1` on one BFCL-V4 multi-turn entry.
 * The benchmark policy server is the scripted replay server playing the entry's ground truth, so the
 * official checker scores each step's child Evaluation valid; it logs which model each call named,
 * which must be the run's pinned steps `<runId>@1` and `<runId>@2`.
 */
describe('benchmarks inside a GrpoTraining run', () => {
  let db: TestDatabase;
  let grpoModels: ModelServer;
  let replay: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let trainer: PythonProcess;
  let policy: PythonProcess;
  let evalWorker: EvalWorkerProcess;
  const runId = `grpo-bench-${Date.now()}`;
  const gpuQueue = `gpu-${randomBytes(4).toString('hex')}`;
  const evalQueue = `eval-${randomBytes(4).toString('hex')}`;
  const modelsAsked: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-grpo-bench-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: 2 });
    grpoModels = await startModelServer({ script: grpoFixtureScript });
    const script = evalReplayScript(await replayPlans('bfcl', 'multi_turn_base', [ENTRY])) as (
      request: ScriptedRequest,
    ) => Reply;
    replay = await startModelServer({
      script: (request) => {
        modelsAsked.push(request.body.model);
        return script(request);
      },
    });
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
    evalWorker = await startEvalWorker({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_EVAL_TASK_QUEUE: evalQueue,
      MOCKWORLD_EVAL_CONCURRENCY: '1',
      DATABASE_URL: db.url,
    });
    await Promise.all([trainer.ready, policy.ready]);
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  }, 240_000);
  afterAll(async () => {
    await tw?.close();
    await evalWorker?.kill();
    await trainer?.kill();
    await policy?.kill();
    await replay?.close();
    await grpoModels?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const spec = async (bfcl: Record<string, unknown>) => {
    const policyUrl = /(http:\/\/\S+\/v1)/.exec(await policy.ready)![1]!;
    const role = { endpoint: { baseUrl: grpoModels.url, model: 'scripted' } };
    return {
      kind: 'GrpoTraining',
      dataset: { synthesisRunId: SYNTHESIS_RUN },
      policy: fixturePolicy({ baseUrl: policyUrl, model: 'policy' }),
      judge: role,
      toolSimulator: role,
      userSimulator: role,
      globalBatch: 2,
      miniBatch: 2,
      rolloutsPerTask: 2,
      maxTurns: 2,
      learningRate: 1e-3,
      epochs: 2, // 2 tasks, a batch of 2: one iteration per epoch
      gpuTaskQueue: gpuQueue,
      benchmarks: {
        every: 1,
        server: { baseUrl: replay.url },
        bfcl,
        evalTaskQueue: evalQueue,
        bootstrapSamples: 100,
      },
    };
  };

  it('evaluates each step once as a child Evaluation and reports its scores per iteration', async () => {
    const summary = await tw.client.workflow.execute('GrpoTraining', {
      args: [await spec({ categories: ['multi_turn_base'], taskIds: [ENTRY] })],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    expect(summary).toMatchObject({ iterations: 2, policyStep: 2, stopped: false });

    // One child Evaluation per step, under its deterministic id, each of the step it names.
    const children = await query<{ run_id: string; status: string; step: number }>(
      db.url,
      `SELECT run_id, status, (spec->'policy'->'checkpoint'->>'step')::int AS step
         FROM runs WHERE kind = 'Evaluation' ORDER BY run_id`,
    );
    expect(children).toEqual([
      { run_id: `${runId}-eval-step-1`, status: 'completed', step: 1 },
      { run_id: `${runId}-eval-step-2`, status: 'completed', step: 2 },
    ]);
    const trials = await query<{ evaluation_id: string; n: number }>(
      db.url,
      'SELECT evaluation_id, count(*)::int AS n FROM eval_trials GROUP BY 1 ORDER BY 1',
    );
    expect(trials).toEqual([
      { evaluation_id: `${runId}-eval-step-1`, n: 1 },
      { evaluation_id: `${runId}-eval-step-2`, n: 1 },
    ]);
    expect([...new Set(modelsAsked)].sort()).toEqual([`${runId}@1`, `${runId}@2`]);
    for (const step of [1, 2]) {
      const child = tw.client.workflow.getHandle(`${runId}-eval-step-${step}`);
      const description = await child.describe();
      expect(description.parentExecution?.workflowId).toBe(runId);
      expect(((await child.result()) as EvaluationSummary).metrics.groups[0]).toMatchObject({
        group: 'multi_turn_base',
        avgAtK: 1,
      });
    }

    // The scores against each iteration, where the viewer, the trackers and the report read them.
    const metrics = await query<{ iteration: number; benchmarks: Record<string, unknown> }>(
      db.url,
      `SELECT iteration, metrics->'benchmarks' AS benchmarks FROM training_metrics WHERE run_id = $1
        ORDER BY iteration`,
      [runId],
    );
    expect(metrics).toEqual(
      [1, 2].map((step) => ({
        iteration: step - 1,
        benchmarks: {
          evaluationId: `${runId}-eval-step-${step}`,
          bfcl: {
            multi_turn_base: {
              avg: 1,
              avgCi: [1, 1],
              passHat: { '1': 1 },
              tasks: 1,
              k: 1,
              modelErrors: 0,
            },
            // One of BFCL's four multi-turn categories: no overall (N/A), not that category's score.
          },
        },
      })),
    );

    const report = await runCli(
      { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: db.url, MOCKWORLD_HOME: dir },
      'report',
      runId,
    );
    expect(report.code).toBe(0);
    const table = report.stdout.split('benchmarks per step (child Evaluation runs)')[1]!;
    expect(table).toMatch(/iteration\s+step\s+bfcl multi_turn_base Avg@k\s+bfcl multi_turn_base pass\^k/);
    const rows = table.split('\n').filter((line) => /^\s*\d+\s+step-\d/.test(line));
    expect(rows.map((line) => line.trim().split(/\s+/))).toEqual([
      ['0', 'step-1', '1.000', '1.000', `${runId}-eval-step-1`],
      ['1', 'step-2', '1.000', '1.000', `${runId}-eval-step-2`],
    ]);
    // The benchmark curve next to the reward curve in the report's figure.
    const plot = /reward curve: (\S+)/.exec(report.stdout)![1]!;
    const svg = await readFile(plot, 'utf8');
    expect(svg).toContain('bfcl multi_turn_base: Avg@k (policy after the step)');
    const points = svg.match(/<path [^>]*aria-roledescription="point"[^>]*>/g) ?? [];
    expect(points.filter((p) => p.includes('series: bfcl multi_turn_base: Avg@k'))).toHaveLength(2);
    await recordHistory(runId, 'grpo-training-benchmarks');
  }, 600_000);

  it('refuses at its start a benchmark task the evaluation worker does not have', async () => {
    const workflowId = `${runId}-bad-task`;
    const asked = modelsAsked.length;
    const failed = await tw.client.workflow
      .execute('GrpoTraining', {
        args: [await spec({ categories: ['multi_turn_base'], taskIds: ['multi_turn_base_99999'] })],
        taskQueue: tw.taskQueue,
        workflowId,
      })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    const messages: string[] = [];
    for (let e: unknown = failed; e instanceof Error; e = e.cause) messages.push(e.message);
    expect(messages.join('\n')).toContain('multi_turn_base_99999');
    // Nothing ran: no run row, no rollout, no trial.
    expect(await query(db.url, 'SELECT 1 FROM runs WHERE run_id = $1', [workflowId])).toEqual([]);
    expect(await query(db.url, 'SELECT 1 FROM training_metrics WHERE run_id = $1', [workflowId])).toEqual([]);
    expect(modelsAsked.length).toBe(asked);
  }, 120_000);
});
