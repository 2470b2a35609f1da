import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { statusQuery } from '../../workflows/controls.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { startOwnTemporal, type OwnTemporal } from '../../testkit/own-temporal.js';

describe('the Temporal server restarted mid-run', () => {
  let dir: string;
  let server: OwnTemporal;
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-restart-'));
    server = await startOwnTemporal(inject('temporalCli'), dir);
    db = await createTestDatabase();
    models = await startModelServer({ latencyMs: 700 });
    tw = await startTestWorker(server.address, db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await server?.stop();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('completes the run from the same db file after a crash of the server', async () => {
    const steps = 6;
    const handle = await tw.client.workflow.start('Smoke', {
      args: [
        {
          prompt: 'restart me',
          steps,
          model: { endpoint: { baseUrl: models.url, model: 'scripted' }, sampling: { maxTokens: 8 } },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: `smoke-restart-${Date.now()}`,
    });
    await eventually(async () => (await handle.query(statusQuery)).done >= 2);

    await server.crashAndRestart();

    const summary = await handle.result();
    expect(summary).toMatchObject({ steps });
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    // Every step was paid for exactly once, restart or not.
    expect(models.requestCount()).toBe(steps);
  });
});
