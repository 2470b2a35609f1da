import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

describe('the mockworld CLI', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;

  const cli = (...args: string[]) =>
    runCli(
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        DATABASE_URL: db.url,
        MOCKWORLD_TASK_QUEUE: tw.taskQueue,
      },
      ...args,
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-cli-'));
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses an invalid spec before starting anything, naming every bad field', async () => {
    const file = path.join(dir, 'bad.yaml');
    await writeFile(
      file,
      [
        'kind: Smoke',
        'steps: -1',
        'prompt: ""',
        'extra: 1',
        'model:',
        '  endpoint:',
        '    baseUrl: not-a-url',
        '    model: m',
      ].join('\n'),
    );
    const id = `cli-invalid-${Date.now()}`;
    const result = await cli('start', file, '--id', id);
    expect(result.code).toBe(2);
    for (const field of ['steps', 'prompt', 'extra', 'model.endpoint.baseUrl'])
      expect(result.stderr).toContain(field);
    await expect(tw.client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  it('names the valid kinds when the kind is unknown', async () => {
    const file = path.join(dir, 'unknown.json');
    await writeFile(file, JSON.stringify({ kind: 'Training' }));
    const result = await cli('start', file);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/kind: must be one of Smoke/);
  });

  it('starts and waits for a run, then shows its status and report as tables and JSON', async () => {
    const file = path.join(dir, 'smoke.json');
    await writeFile(
      file,
      JSON.stringify({
        kind: 'Smoke',
        steps: 2,
        model: { endpoint: { baseUrl: models.url, model: 'scripted' } },
      }),
    );
    const id = `cli-smoke-${Date.now()}`;
    const started = await cli('start', file, '--id', id, '--wait');
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/steps\s+2/);

    const status = await cli('status', id, '--json');
    expect(JSON.parse(status.stdout)).toMatchObject({
      workflowId: id,
      temporalStatus: 'COMPLETED',
      status: { done: 2 },
    });

    const report = await cli('report', id);
    expect(report.stdout).toMatch(/model usage by role/);
    expect(report.stdout).toMatch(/smoke/);
    const reportJson = JSON.parse((await cli('report', id, '--json')).stdout);
    expect(reportJson.usage[0]).toMatchObject({ role: 'smoke', calls: 2 });
  });

  it('shows the state and progress a run last recorded when no worker answers its status query', async () => {
    const gone = await startTestWorker(inject('temporalAddress'), db.url);
    const id = `cli-no-worker-${Date.now()}`;
    try {
      await gone.client.workflow.execute('Smoke', {
        args: [{ kind: 'Smoke', steps: 1, model: { endpoint: { baseUrl: models.url, model: 'scripted' } } }],
        taskQueue: gone.taskQueue,
        workflowId: id,
      });
    } finally {
      await gone.close();
    }
    const json = JSON.parse((await cli('status', id, '--json')).stdout);
    expect(json).toMatchObject({
      temporalStatus: 'COMPLETED',
      recorded: { state: 'completed', progress: 1 },
    });
    expect(json.status).toBeUndefined();
    expect(json.statusError).toEqual(expect.any(String));
    const table = await cli('status', id);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/state\s+completed/);
    expect(table.stdout).toMatch(/progress\s+100%/);
    expect(table.stdout).toContain(`mockworld worker --task-queue ${gone.taskQueue}`);
  });

  it('sends pause, resume and cancel to a run', async () => {
    models.setLatency(500);
    const file = path.join(dir, 'long.json');
    await writeFile(
      file,
      JSON.stringify({
        kind: 'Smoke',
        steps: 50,
        model: { endpoint: { baseUrl: models.url, model: 'scripted' } },
      }),
    );
    const id = `cli-controls-${Date.now()}`;
    expect((await cli('start', file, '--id', id)).code).toBe(0);
    expect((await cli('pause', id)).code).toBe(0);
    const paused = JSON.parse((await cli('status', id, '--json')).stdout);
    expect(paused.status.state).toBe('paused');
    expect((await cli('resume', id)).code).toBe(0);
    expect((await cli('cancel', id)).code).toBe(0);
    const error = await tw.client.workflow
      .getHandle(id)
      .result()
      .catch((e: unknown) => e);
    expect(String(error)).toMatch(/cancel/i);
    expect((await tw.client.workflow.getHandle(id).describe()).status.name).toBe('CANCELLED');
    models.setLatency(0);
  });
});
