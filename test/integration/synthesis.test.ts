import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { statusQuery, pauseSignal, resumeSignal } from '../../workflows/controls.js';
import { stageQuery, taskStageQuery } from '../../workflows/synthesis-controls.js';
import { TaskStageSchema } from '../../schemas/synthesis-records.js';
import { queryRolesAnsweredBy } from '../../activities/llm/call-store.js';
import { getPool } from '../../activities/store/db.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { scriptedOutcome, scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const TASKS = 20;
const expectedKept = Array.from({ length: TASKS }, (_, i) => scriptedOutcome(i)).filter(
  (o) => o === 'kept',
).length;
const expectedReasons = { invalid_tools: 4, low_coverage: 4 };

describe('a synthesis dataset run on the real stack', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let sql: pg.Client;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-synthesis-'));
    process.env.MOCKWORLD_HOME = dir;
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(TASKS));
    db = await createTestDatabase();
    models = await startModelServer({ script: synthesisScript, latencyMs: 20 });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
  });
  afterAll(async () => {
    await sql?.end();
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps and rejects exactly the scripted tasks, answers stage queries, and holds new tasks while paused', async () => {
    const endpoint = { baseUrl: models.url, model: 'scripted' };
    const role = { endpoint };
    const handle = await tw.client.workflow.start('Synthesis', {
      args: [
        {
          name: 'e2e',
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: TASKS,
          demonstrationsPerTask: 2,
          maxTurns: 6,
          coverageThreshold: 0.5,
          concurrency: 4,
          tasksPerWorkflowRun: 8, // 20 tasks: the dataset workflow continues as new twice
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: `synthesis-e2e-${Date.now()}`,
    });

    // One task's stage, mid-run, from the dataset workflow and from the task workflow itself.
    const midStage = await eventually(async () => {
      const stage = await handle.query(taskStageQuery, 0);
      return stage !== 'pending' && stage;
    });
    expect([...TaskStageSchema.options, 'failed']).toContain(midStage);
    const taskStage = await tw.client.workflow.getHandle(`${handle.workflowId}-task-00000`).query(stageQuery);
    expect(TaskStageSchema.options).toContain(taskStage);

    // Pause: no task starts while paused; running ones finish.
    await handle.signal(pauseSignal);
    await eventually(async () => (await handle.query(statusQuery)).state === 'paused');
    const started = async () =>
      (await sql.query('SELECT count(*)::int AS n FROM tasks WHERE run_id = $1', [handle.workflowId])).rows[0]
        .n;
    const pendingAtPause = (await handle.query(statusQuery)).counts.pending;
    await eventually(async () => {
      const counts = (await handle.query(statusQuery)).counts;
      const inFlight = Object.entries(counts)
        .filter(([stage]) => !['pending', 'kept', 'rejected', 'failed'].includes(stage))
        .reduce((sum, [, n]) => sum + n, 0);
      return inFlight === 0;
    });
    const startedWhilePaused = await started();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await started()).toBe(startedWhilePaused);
    expect((await handle.query(statusQuery)).counts.pending).toBe(pendingAtPause);
    expect(pendingAtPause).toBeGreaterThan(0);

    await handle.signal(resumeSignal);
    const summary = await handle.result();
    // Two continue-as-new boundaries crossed, with the tally carried across them.
    await eventually(async () => {
      let runs = 0;
      for await (const _ of tw.client.workflow.list({ query: `WorkflowId = "${handle.workflowId}"` })) runs++;
      return runs === 3;
    });
    expect(summary).toMatchObject({
      tasks: TASKS,
      kept: expectedKept,
      rejected: TASKS - expectedKept,
      failed: 0,
    });
    expect(summary.rejectedByReason).toEqual(expectedReasons);

    // The database agrees: one row per task, outcomes and reasons as scripted.
    const { rows } = await sql.query(
      'SELECT idx, stage, reject_reason FROM tasks WHERE run_id = $1 ORDER BY idx',
      [handle.workflowId],
    );
    expect(rows.map((r) => r.idx)).toEqual(Array.from({ length: TASKS }, (_, i) => i));
    for (const row of rows) {
      const expected = scriptedOutcome(row.idx);
      expect(row.stage).toBe(expected === 'kept' ? 'kept' : 'rejected');
      if (expected !== 'kept') expect(row.reject_reason).toBe(expected);
    }
    const refused = await sql.query(
      'SELECT reason FROM synthesis_persona_rejections WHERE run_id = $1 ORDER BY line',
      [handle.workflowId],
    );
    expect(refused.rows.map((r) => r.reason)).toEqual(['empty persona', 'not JSON', 'duplicate id']);

    // The report and both export layouts.
    const run = await sql.query('SELECT status, summary FROM runs WHERE run_id = $1', [handle.workflowId]);
    expect(run.rows[0].status).toBe('completed');
    const report = run.rows[0].summary;
    expect(report).toMatchObject({ tasks: TASKS, kept: expectedKept, rejectedByReason: expectedReasons });
    expect(report.demonstrations).toBe(expectedKept * 2);
    expect(report.userQuestionsPerDemonstration.mean).toBe(1);
    // Every scripted demonstration asks the user once; the breakdown counts kept ones only.
    expect(report.keptDemonstrationsThat.askedTheUser).toBe(report.demonstrationsKept);
    expect(report.keptDemonstrationsThat.both).toBe(report.keptDemonstrationsThat.calledATool);
    // Every task the coverage judge graded got its empty control; the honest script passed them all.
    const graded = expectedKept + expectedReasons.low_coverage;
    expect(report.coverageJudgeControls).toEqual({ controls: graded, passed: graded, passRate: 1 });
    expect(report.judge).toMatchObject({ controlPassRate: 1, unreliable: false, reason: null });
    // The calls are charged to the tasks, and `report` and the viewer find them as the run's own.
    expect(await queryRolesAnsweredBy(getPool(db.url), handle.workflowId, 'scripted')).toEqual([
      'coverage-judge',
      'coverage-judge-control',
      'rubric-extractor',
      'teacher',
      'tool-simulator',
      'user-simulator',
    ]);
    const exported = (await readFile(report.dataset.tasksFile, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(exported).toHaveLength(expectedKept);
    expect(exported[0]).toMatchObject({
      prompt: [{ role: 'system' }, { role: 'user' }],
      rubric: { subGoals: expect.any(Array) },
    });
    expect(exported[0].tools.map((t: { function: { name: string } }) => t.function.name)).toContain(
      'ask_user',
    );
    const verl = (await readFile(report.dataset.verlFile, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(verl[0]).toMatchObject({
      prompt: expect.any(Array),
      extra_info: { rubric: expect.any(Object), tools_kwargs: expect.any(Object) },
    });

    await recordHistory(handle.workflowId, 'synthesis-paused-resumed');
    await recordHistory(`${handle.workflowId}-task-00000`, 'synthesis-task-kept');
    await recordHistory(`${handle.workflowId}-task-00001`, 'synthesis-task-invalid-tools');
    await recordHistory(`${handle.workflowId}-task-00003`, 'synthesis-task-low-coverage');

    // Every paid model call is in the ledger exactly once.
    const calls = await sql.query('SELECT count(*)::int AS n FROM llm_calls');
    expect(calls.rows[0].n).toBe(models.stats.total);
  });
});
