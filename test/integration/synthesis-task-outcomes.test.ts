import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

/**
 * A synthesis task that fails (its refine call refused with a 400 at the model boundary) is shown
 * beside the kept and rejected ones, with the stage it failed in and why, by `mockworld report`
 * (which the demo's closing summary prints the same way: renderReport of readReport), and
 * `status --task N` tells its story from its row with no workflow to ask.
 */
describe('failed, rejected and kept tasks in the report', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-outcomes-'));
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(3, false));
    db = await createTestDatabase();
    // Task 2's toolset answer queues a 400 for the next teacher request: with one task at a time,
    // that is task 2's refine. Task 0 is kept and task 1 rejected (invalid tools), as scripted.
    models = await startModelServer({
      script: (request) => {
        const reply = synthesisScript(request);
        const isToolset = request.body.response_format?.json_schema?.name === 'toolset';
        if (isToolset && JSON.stringify(request.body.messages).includes('Persona number 2:'))
          models.injectFaults({ kind: 'bad-request', role: 'teacher' });
        return reply;
      },
    });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('lists the failed task with its stage and reason, and status --task tells it without a worker', async () => {
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const runId = `synthesis-outcomes-${Date.now()}`;
    await tw!.client.workflow.execute('Synthesis', {
      args: [
        {
          name: 'outcomes',
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: 3,
          demonstrationsPerTask: 1,
          maxTurns: 6,
          concurrency: 1,
          models: {
            teacher: role,
            toolSimulator: role,
            userSimulator: role,
            rubricExtractor: role,
          },
        },
      ],
      taskQueue: tw!.taskQueue,
      workflowId: runId,
    });
    const rows = await query<{
      idx: number;
      stage: string;
      failed_stage: string | null;
      reject_reason: string;
    }>(db.url, 'SELECT idx, stage, failed_stage, reject_reason FROM tasks WHERE run_id = $1 ORDER BY idx', [
      runId,
    ]);
    expect(rows.map((r) => [r.idx, r.stage, r.failed_stage, r.reject_reason])).toEqual([
      [0, 'kept', null, null],
      [1, 'rejected', null, 'invalid_tools'],
      [2, 'failed', 'refine', 'ModelRequestRejectedError'],
    ]);

    const env = { DATABASE_URL: db.url, MOCKWORLD_HOME: dir, TEMPORAL_ADDRESS: inject('temporalAddress') };
    const report = await runCli(env, 'report', runId);
    expect(report.code, report.stderr).toBe(0);
    const lines = report.stdout.split('\n');
    // The summary counts it, and the task list shows it first with its stage, reason and detail.
    expect(lines.find((l) => /^failedByStage\s/.test(l))).toMatch(/refine 1/);
    const taskLines = lines.filter((l) => /^\d\s+(kept|rejected|failed)\s/.test(l));
    expect(taskLines[0]).toMatch(/^2\s+failed\s+refine\s+ModelRequestRejectedError\s+.*400/);
    expect(taskLines[1]).toMatch(/^1\s+rejected\s+toolset\s+invalid_tools\s+tools\[0\]/);
    expect(taskLines[2]).toMatch(/^0\s+kept\s+-\s+-/);
    expect(taskLines).toHaveLength(3);
    expect(report.stdout).toContain(`one task in full: ./bin/mockworld status ${runId} --task 2`);
    expect(report.stdout).not.toContain('Toy figures'); // a scripted model, not the embedded one

    // The pointer works after the run: the worker is stopped, the row answers.
    await tw!.close();
    tw = undefined;
    const status = await runCli(env, 'status', runId, '--task', '2');
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`task 2 of ${runId}: failed`);
    expect(status.stdout).toMatch(/stage\s+refine/);
    expect(status.stdout).toMatch(/reason\s+ModelRequestRejectedError/);
    expect(status.stdout).toMatch(/detail\s+.*400/);
  });
});
