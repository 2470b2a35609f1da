import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pauseSignal, resumeSignal, statusQuery } from '../../workflows/controls.js';
import { groupsQuery, tasksQuery } from '../../workflows/evaluation-controls.js';
import type { EvaluationSummary } from '../../workflows/evaluation.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { evalReplayScript, type ReplayPlans } from '../../testkit/eval-replay.js';
import { replayPlans, startEvalWorker, type EvalWorkerProcess } from '../../testkit/eval-worker.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { sampleValue, scrape } from '../../testkit/prometheus.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

/**
 * The end-to-end path of an Evaluation run: the workflow (CPU worker, through the plugin) schedules
 * each (benchmark, group, task, trial) on the Python evaluation worker's own queue, which runs the
 * benchmarks' official code against the scripted model server replaying ground truth, stores the
 * rows and computes the metrics. Kept to one task per BFCL category and one tau2 task x 2 trials.
 */
describe('an Evaluation run', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let evalWorker: EvalWorkerProcess;
  let metricsAddress: string;
  const evalQueue = `eval-${randomBytes(4).toString('hex')}`;
  const categories = [
    'multi_turn_base',
    'multi_turn_miss_func',
    'multi_turn_miss_param',
    'multi_turn_long_context',
  ];

  beforeAll(async () => {
    db = await createTestDatabase();
    const plans: Record<string, ReplayPlans[string]> = {};
    for (const category of categories)
      Object.assign(plans, await replayPlans('bfcl', category, [`${category}_0`]));
    Object.assign(plans, await replayPlans('tau2', 'airline', ['0'], 2));
    models = await startModelServer({ script: evalReplayScript(plans) });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    metricsAddress = `127.0.0.1:${await freePort()}`;
    evalWorker = await startEvalWorker({
      MOCKWORLD_METRICS_ADDRESS: metricsAddress,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_EVAL_TASK_QUEUE: evalQueue,
      MOCKWORLD_EVAL_CONCURRENCY: '2',
      DATABASE_URL: db.url,
    });
  }, 240_000);
  afterAll(async () => {
    await evalWorker?.kill();
    await tw?.close();
    await models?.close();
    await db?.drop();
  });

  const spec = () => ({
    kind: 'Evaluation',
    name: 'replay',
    policy: { endpoint: { baseUrl: models.url, model: 'replay-policy' } },
    benchmarks: {
      bfcl: { categories, limit: 1 },
      tau2: {
        domains: ['airline'],
        limit: 1,
        trials: 2,
        userSimulator: { endpoint: { baseUrl: models.url, model: 'replay-user' } },
      },
    },
    concurrency: 2,
    evalTaskQueue: evalQueue,
    bootstrapSamples: 200,
  });

  it('runs every trial once through the official code, pauses and resumes, and scores the replay', async () => {
    const workflowId = `evaluation-${Date.now()}`;
    const handle = await tw.client.workflow.signalWithStart('Evaluation', {
      args: [spec()],
      taskQueue: tw.taskQueue,
      workflowId,
      signal: pauseSignal,
      signalArgs: [],
    });
    const paused = await eventually(async () => {
      const status = await handle.query(statusQuery);
      return status.state === 'paused' && status.total > 0 && status;
    }, 120_000);
    expect(paused).toMatchObject({ kind: 'Evaluation', done: 0, total: 4 + 2 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(models.requestCount()).toBe(0); // paused before the first trial: no model call

    await handle.signal(resumeSignal);
    const summary: EvaluationSummary = await handle.result();
    const { metrics } = summary;
    expect(metrics.trials).toBe(6);
    for (const group of metrics.groups) {
      expect(group.avgAtK, `${group.benchmark}/${group.group}`).toBe(1);
      expect(group.modelErrors).toBe(0);
    }
    const airline = metrics.groups.find((g) => g.group === 'airline')!;
    expect(airline).toMatchObject({
      tasks: 1,
      k: 2,
      passHatK: { '1': 1, '2': 1 },
      terminations: { user_stop: 2 },
    });
    expect(metrics.bfclOverall).toMatchObject({ complete: true, accuracy: 1 });
    expect(summary.groups.map((g) => g.packages['bfcl-eval'])).toContain('2026.3.23');

    const groups = await handle.query(groupsQuery);
    expect(groups.every((g) => g.state === 'done')).toBe(true);
    const child = tw.client.workflow.getHandle(`${workflowId}/tau2/airline`);
    expect(await child.query(tasksQuery)).toEqual({ '0': ['1', '1'] });
    const rows = await query<{ n: number }>(
      db.url,
      'SELECT count(*)::int AS n FROM eval_trials WHERE evaluation_id = $1',
      [workflowId],
    );
    expect(rows[0]!.n).toBe(6);
    const run = await query<{ status: string }>(db.url, 'SELECT status FROM runs WHERE run_id = $1', [
      workflowId,
    ]);
    expect(run[0]!.status).toBe('completed');
    await recordHistory(workflowId, 'evaluation-paused-resumed');
    await recordHistory(`${workflowId}/tau2/airline`, 'evaluation-group-tau2');

    // Started again under the same id: every trial is found stored, none is run again.
    const calls = models.requestCount();
    const again = await tw.client.workflow.execute('Evaluation', {
      args: [spec()],
      taskQueue: tw.taskQueue,
      workflowId,
    });
    expect(models.requestCount()).toBe(calls);
    expect((again as EvaluationSummary).metrics.groups.map((g) => g.avgAtK)).toEqual(
      metrics.groups.map((g) => g.avgAtK),
    );
  }, 600_000);

  it("serves the SDK's series and its trials' at MOCKWORLD_METRICS_ADDRESS", async () => {
    const text = await scrape(metricsAddress);
    expect(text).toMatch(/^temporal_\w+/m); // the Temporal SDK runtime's own series
    const trials = (benchmark: string, group: string) =>
      sampleValue(text, 'mockworld_eval_trials_total', { benchmark, group });
    expect(trials('tau2', 'airline')).toBeGreaterThanOrEqual(2);
    for (const category of categories) expect(trials('bfcl', category)).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/mockworld_eval_trial_duration_seconds_bucket\{[^}]*benchmark="bfcl"/);
  });
});
