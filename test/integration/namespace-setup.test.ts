/**
 * A worker on a namespace that has never seen mockworld: the plugin registers its search
 * attributes before polling, so a run completes; told only to check, it refuses to start and says
 * how to add them; and a worker that runs mockworld's workflows without the plugin leaves a run
 * whose failing workflow task the client's query error names.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { missingSearchAttributes } from '../../deploy/search-attributes.js';
import { MOCKWORLD_WORKFLOWS_PATH, MockworldPlugin } from '../../workers/plugin.js';
import { queryRun } from '../../client/runs.js';
import { statusQuery } from '../../workflows/controls.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { eventually, freshNamespace } from '../../testkit/temporal.js';

describe("a worker on a namespace without mockworld's search attributes", () => {
  let db: TestDatabase;
  let models: ModelServer;
  let connection: Connection;
  let native: NativeConnection;

  const smoke = () => ({
    kind: 'Smoke',
    name: 'fresh-namespace',
    prompt: 'hello',
    steps: 1,
    model: { endpoint: { baseUrl: models.url, model: 'scripted' }, sampling: { maxTokens: 16 } },
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    connection = await Connection.connect({ address: inject('temporalAddress') });
    native = await NativeConnection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await native?.close();
    await connection?.close();
    await models?.close();
    await db?.drop();
  });

  it('registers them before polling, and a run completes', async () => {
    const namespace = await freshNamespace(connection);
    expect(await missingSearchAttributes(connection, namespace)).toContain('MockworldKind');
    const taskQueue = `ns-${namespace}`;
    const worker = await Worker.create({
      connection: native,
      namespace,
      taskQueue,
      plugins: [new MockworldPlugin({ databaseUrl: db.url })],
    });
    const client = new Client({ connection, namespace });
    const result = await worker.runUntil(
      client.workflow.execute('Smoke', { args: [smoke()], taskQueue, workflowId: `smoke-${namespace}` }),
    );
    expect(result).toMatchObject({ steps: 1 });
    expect(await missingSearchAttributes(connection, namespace)).toEqual([]);
  });

  it('with `check`, refuses to start and names each attribute with the command that adds it', async () => {
    const namespace = await freshNamespace(connection);
    // Its own connection: a worker refused before it polls keeps a reference to its connection
    // (the SDK releases it only when a worker that ran shuts down), so that one stays open.
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address: inject('temporalAddress') }),
      namespace,
      taskQueue: `ns-${namespace}`,
      plugins: [new MockworldPlugin({ databaseUrl: db.url, searchAttributes: 'check' })],
    });
    const refused = worker.run();
    await expect(refused).rejects.toThrow(/lacks mockworld's search attributes MockworldKind/);
    await expect(refused).rejects.toThrow(
      `temporal operator search-attribute create --namespace ${namespace} --name MockworldKind --type Keyword`,
    );
    expect(await missingSearchAttributes(connection, namespace)).toContain('MockworldKind');
  });

  it("without the plugin, the client's query error names the failing workflow task and the fix", async () => {
    const namespace = await freshNamespace(connection);
    const taskQueue = `ns-${namespace}`;
    const worker = await Worker.create({
      connection: native,
      namespace,
      taskQueue,
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      activities: createActivities({ databaseUrl: db.url }),
    });
    const client = new Client({ connection, namespace });
    await worker.runUntil(async () => {
      const handle = await client.workflow.start('Smoke', {
        args: [smoke()],
        taskQueue,
        workflowId: `smoke-${namespace}`,
      });
      await eventually(async () => ((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) > 1);
      const error = await queryRun(client, handle.workflowId, statusQuery).catch((e: Error) => e);
      expect(String(error)).toMatch(/workflow task keeps failing \(attempt \d+\): BadSearchAttributes: /);
      expect(String(error)).toMatch(/registers them at start/);
      await handle.terminate('test over');
    });
  });
});
