import { WorkflowFailedError } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { statusQuery, pauseSignal, resumeSignal } from '../../workflows/controls.js';
import { createRunActivities } from '../../activities/runs.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

describe('a workflow started through the plugin', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  const smokeSpec = (steps: number) => ({
    kind: 'Smoke',
    name: 'it',
    prompt: 'hello',
    steps,
    model: { endpoint: { baseUrl: models.url, model: 'scripted' }, sampling: { maxTokens: 16 } },
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
  });

  it('completes on a real worker, records the run and sets the search attributes', async () => {
    const handle = await tw.client.workflow.start('Smoke', {
      args: [smokeSpec(3)],
      taskQueue: tw.taskQueue,
      workflowId: `smoke-complete-${Date.now()}`,
    });
    const summary = await handle.result();
    expect(summary).toMatchObject({ steps: 3, cachedSteps: 0 });

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const run = await client.query('SELECT status, kind FROM runs WHERE run_id = $1', [handle.workflowId]);
    const calls = await client.query('SELECT count(*)::int AS n FROM llm_calls WHERE run_id = $1', [
      handle.workflowId,
    ]);
    await client.end();
    expect(run.rows[0]).toEqual({ status: 'completed', kind: 'Smoke' });
    expect(calls.rows[0].n).toBe(3);

    const description = await handle.describe();
    expect(description.searchAttributes.MockworldKind).toEqual(['Smoke']);
    expect(description.searchAttributes.MockworldState).toEqual(['completed']);
    expect(await handle.query(statusQuery)).toMatchObject({ state: 'completed', done: 3, total: 3 });
    await recordHistory(handle.workflowId, 'smoke-completed');
  });

  it('holds new steps while paused and finishes after resume', async () => {
    const handle = await tw.client.workflow.signalWithStart('Smoke', {
      args: [smokeSpec(2)],
      taskQueue: tw.taskQueue,
      workflowId: `smoke-pause-${Date.now()}`,
      signal: pauseSignal,
      signalArgs: [],
    });
    const paused = await eventually(async () => {
      const s = await handle.query(statusQuery);
      return s.state === 'paused' && s;
    });
    expect(paused.done).toBe(0);
    const before = models.requestCount();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(models.requestCount()).toBe(before);
    expect((await handle.query(statusQuery)).state).toBe('paused');

    await handle.signal(resumeSignal);
    expect(await handle.result()).toMatchObject({ steps: 2 });
    await recordHistory(handle.workflowId, 'smoke-paused-resumed');
  });

  it('fails at once, naming every bad field, when started with an invalid spec as from the UI', async () => {
    const handle = await tw.client.workflow.start('Smoke', {
      args: [{ steps: 0, prompt: '', bogus: true, model: { sampling: { temperature: 9 } } }],
      taskQueue: tw.taskQueue,
      workflowId: `smoke-invalid-${Date.now()}`,
    });
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const message = String((error as WorkflowFailedError).cause?.message);
    for (const field of ['steps', 'prompt', 'model.sampling.temperature']) expect(message).toContain(field);
    expect(message).toMatch(/bogus/);
    const description = await handle.describe();
    expect(description.status.name).toBe('FAILED');
    expect(description.historyLength).toBeLessThan(10);
    await recordHistory(handle.workflowId, 'smoke-invalid-spec');
  });
  it('gives the runs row to a new execution under the same id, and refuses an id of another kind', async () => {
    const workflowId = `smoke-rerun-${Date.now()}`;
    const row = async () =>
      (
        await query<{ status: string; steps: number; summary: { steps: number } | null }>(
          db.url,
          `SELECT status, (spec->>'steps')::int AS steps, summary FROM runs WHERE run_id = $1`,
          [workflowId],
        )
      )[0];
    // Prompts of their own: calls answered from the cache would let the re-run finish at once.
    const first = { ...smokeSpec(1), prompt: `first ${workflowId}` };
    const second = { ...smokeSpec(2), prompt: `second ${workflowId}` };
    await tw.client.workflow.execute('Smoke', { args: [first], taskQueue: tw.taskQueue, workflowId });
    expect(await row()).toMatchObject({ status: 'completed', steps: 1, summary: { steps: 1 } });

    models.setLatency(1_000);
    try {
      const again = await tw.client.workflow.start('Smoke', {
        args: [second],
        taskQueue: tw.taskQueue,
        workflowId,
      });
      await eventually(async () => (await row())?.steps === 2);
      expect(await row()).toMatchObject({ status: 'running', steps: 2, summary: null });
      await again.result();
    } finally {
      models.setLatency(0);
    }
    expect(await row()).toMatchObject({ status: 'completed', steps: 2, summary: { steps: 2 } });

    const other = createRunActivities(db.url);
    await expect(other.recordRunStart({ runId: workflowId, kind: 'Synthesis', spec: {} })).rejects.toThrow(
      `workflow id ${workflowId} already holds a Smoke run`,
    );
    expect(await row()).toMatchObject({ status: 'completed', steps: 2 });
  });
});
