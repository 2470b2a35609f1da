/**
 * Operators' metrics (issue 20, point 4): a worker process with MOCKWORLD_METRICS_ADDRESS serves,
 * during a run, the Temporal SDK runtime's series and mockworld's own at one /metrics endpoint.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

describe('a worker metrics endpoint', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let connection: Connection;
  let worker: WorkerProcess | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-metrics-'));
    db = await createTestDatabase();
    // Slow answers: the run is still going while the test scrapes.
    models = await startModelServer({ script: () => 'an answer of some tokens', latencyMs: 1_500 });
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await worker?.kill();
    await connection?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it("serves the SDK's and mockworld's series while a run is going", async () => {
    const taskQueue = `metrics-${randomBytes(4).toString('hex')}`;
    const address = `127.0.0.1:${await freePort()}`;
    worker = startWorkerProcess({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: taskQueue,
      MOCKWORLD_HOME: dir,
      MOCKWORLD_METRICS_ADDRESS: address,
    });
    const client = new Client({ connection });
    const handle = await client.workflow.start('Smoke', {
      args: [
        {
          kind: 'Smoke',
          name: 'metrics',
          prompt: 'hello',
          steps: 4,
          model: {
            endpoint: {
              baseUrl: models.url,
              model: 'scripted',
              prices: { inputPerMillion: 1, outputPerMillion: 2 },
            },
            sampling: { maxTokens: 16 },
          },
        },
      ],
      taskQueue,
      workflowId: `metrics-smoke-${randomBytes(3).toString('hex')}`,
    });
    const scraped = await eventually(async () => {
      const text = await (await fetch(`http://${address}/metrics`)).text();
      return /^mockworld_model_calls_total\{role="smoke",source="paid"\} [1-9]/m.test(text) && text;
    }, 60_000);
    const { status } = await handle.describe();
    expect(status.name).toBe('RUNNING'); // scraped during the run
    expect(scraped).toMatch(/^temporal_[a-z_]+/m); // the SDK runtime's own series
    expect(scraped).toMatch(/^temporal_activity_execution_latency\S* /m);
    expect(scraped).toMatch(/^mockworld_model_tokens_total\{role="smoke",kind="prompt"\} [1-9]/m);
    expect(scraped).toMatch(/^mockworld_model_cost_usd_total\{role="smoke"\} \d/m);
    expect(scraped).toMatch(/^# TYPE mockworld_rollout_reward histogram/m);
    await handle.result();

    // Every series the Grafana dashboard plots is one this endpoint serves, but the trainer's
    // (mockworld_trainer_*: the Python trainer's endpoint, checked by workers/trainer/tests/test_metrics.py).
    const dashboard = JSON.parse(
      await readFile(path.join(REPO_ROOT, 'deploy/grafana/mockworld-dashboard.json'), 'utf8'),
    );
    const exprs: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) =>
      p.targets.map((t) => t.expr),
    );
    const names = new Set(
      exprs
        .flatMap((e) => e.match(/\b(?:mockworld|temporal)_[a-z_]+/g) ?? [])
        .filter((name) => !name.startsWith('mockworld_trainer_')),
    );
    const final = await (await fetch(`http://${address}/metrics`)).text();
    const missing = [...names].filter((name) => {
      const family = name.replace(/_(bucket|sum|count)$/, '');
      return !new RegExp(`^(# TYPE ${family} |${name}[{ ])`, 'm').test(final);
    });
    expect(missing).toEqual([]);
  });
});
