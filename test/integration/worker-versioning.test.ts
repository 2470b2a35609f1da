import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

const exec = promisify(execFile);
const { VersioningBehavior } = proto.temporal.api.enums.v1;

/**
 * What the Kubernetes manifests set on a CPU worker: MOCKWORLD_BUILD_ID (+ deployment name) makes
 * it a Worker Versioning version whose runs are PINNED to it, and MOCKWORLD_METRICS_ADDRESS serves
 * the SDK's Prometheus metrics the probes and the scrape annotations use.
 */
describe('a CPU worker with a build id and a metrics address', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let worker: WorkerProcess | undefined;
  let connection: Connection;
  const suffix = randomBytes(4).toString('hex');
  const deployment = `mockworld-test-${suffix}`;
  const buildId = `build-${suffix}`;
  const taskQueue = `versioned-${suffix}`;

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await worker?.kill();
    await connection?.close();
    await models?.close();
    await db?.drop();
  });

  it('polls as that version, serves metrics, and a run started on it is pinned to it', async () => {
    const metrics = `127.0.0.1:${await freePort()}`;
    worker = startWorkerProcess({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: taskQueue,
      MOCKWORLD_BUILD_ID: buildId,
      MOCKWORLD_DEPLOYMENT_NAME: deployment,
      MOCKWORLD_METRICS_ADDRESS: metrics,
    });
    const temporal = (...args: string[]) =>
      exec(inject('temporalCli'), ['worker', 'deployment', ...args, '--address', inject('temporalAddress')]);
    // The version exists once the worker polls; then an operator (here the test) makes it current.
    await eventually(
      () => temporal('describe-version', '--deployment-name', deployment, '--build-id', buildId),
      90_000,
      500,
    );
    await temporal('set-current-version', '--deployment-name', deployment, '--build-id', buildId, '--yes');

    const client = new Client({ connection });
    const handle = await client.workflow.start('Smoke', {
      args: [{ steps: 1, model: { endpoint: { baseUrl: models.url, model: 'scripted' } } }],
      taskQueue,
      workflowId: `${taskQueue}-smoke`,
      workflowExecutionTimeout: '2 minutes',
    });
    expect(await handle.result()).toMatchObject({ steps: 1 });
    const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(info?.behavior).toBe(VersioningBehavior.VERSIONING_BEHAVIOR_PINNED);
    expect(info?.deploymentVersion).toMatchObject({ deploymentName: deployment, buildId });

    const scraped = await (await fetch(`http://${metrics}/metrics`)).text();
    expect(scraped).toMatch(/^temporal_[a-z_]+\{/m);
    expect(scraped).toContain(`task_queue="${taskQueue}"`);
  });
});
