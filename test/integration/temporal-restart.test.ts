import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { registerSearchAttributes } from '../../deploy/search-attributes.js';
import { startDevServer, type DevServer, type DevServerOptions } from '../../deploy/temporal-dev-server.js';
import { statusQuery } from '../../workflows/controls.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

describe('the Temporal server restarted mid-run', () => {
  let dir: string;
  let options: DevServerOptions;
  let server: DevServer;
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-restart-'));
    options = {
      cli: inject('temporalCli'),
      port: await freePort(),
      dbFile: path.join(dir, 'temporal.db'),
      logFile: path.join(dir, 'temporal.log'),
    };
    server = await startDevServer(options);
    const connection = await Connection.connect({ address: server.address });
    await registerSearchAttributes(connection, 'default');
    await connection.close();
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

    const exited = new Promise((resolve) => server.process.once('exit', resolve));
    server.process.kill('SIGKILL');
    await exited;
    server = await startDevServer(options);

    const summary = await handle.result();
    expect(summary).toMatchObject({ steps });
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    // Every step was paid for exactly once, restart or not.
    expect(models.requestCount()).toBe(steps);
  });
});
