/**
 * Traces (issue 20, point 4): a worker process with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT sends the
 * spans of a GRPO group's rollouts to an OTLP/HTTP collector (here, in this test process): the
 * workflow, each rollout activity, and the model calls inside it, in one trace.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { GrpoSpecSchema } from '../../schemas/grpo-spec.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer, type Rule } from '../../testkit/model-server.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

interface Span {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
}

/** An OTLP/HTTP trace receiver (JSON encoding, what the exporter sends by default). */
function startCollector(): Promise<{ url: string; spans: Span[]; close(): Promise<void> }> {
  const spans: Span[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push(s);
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        spans,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

describe('traces of a rollout', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let connection: Connection;
  let worker: WorkerProcess | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-tracing-'));
    db = await createTestDatabase();
    models = await startModelServer({
      script: [
        ...(grpoFixtureScript as readonly Rule[]),
        { role: 'policy', reply: 'Done: record 0 is fixed.' },
      ],
    });
    collector = await startCollector();
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await worker?.kill();
    await connection?.close();
    await collector?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends workflow → activity → model call spans of one trace to the OTLP collector', async () => {
    const taskQueue = `tracing-${randomBytes(4).toString('hex')}`;
    worker = startWorkerProcess({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: taskQueue,
      MOCKWORLD_HOME: dir,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
    });
    await insertFixtureTasks(db.url, { synthesisRunId: 'traced', count: 1 });
    const endpoint = { baseUrl: models.url, model: 'scripted' };
    const spec = GrpoSpecSchema.parse({
      kind: 'GrpoTraining',
      name: 'traced',
      dataset: { synthesisRunId: 'traced', heldOutTasks: 0 },
      policy: {
        base: { kind: 'tiny', seed: 0 },
        endpoint,
        sampling: { temperature: 1, maxTokens: 24, seed: 7 },
      },
      judge: { endpoint },
      toolSimulator: { endpoint },
      userSimulator: { endpoint },
      globalBatch: 1,
      miniBatch: 1,
      rolloutsPerTask: 2,
      maxTurns: 2,
      evaluateEvery: 0,
    });
    const client = new Client({ connection });
    const workflowId = `traced-group-${randomBytes(3).toString('hex')}`;
    await client.workflow.execute('GrpoGroup', {
      args: [
        {
          runId: 'traced-run',
          iteration: 0,
          taskId: fixtureTaskId('traced', 0),
          policyVersion: 'step-0',
          purpose: 'rollout',
          rollouts: 2,
          spec: {
            policy: spec.policy,
            judge: spec.judge,
            toolSimulator: spec.toolSimulator,
            userSimulator: spec.userSimulator,
            maxTurns: spec.maxTurns,
            templates: spec.templates,
            world: spec.world,
          },
        },
      ],
      taskQueue,
      workflowId,
    });

    const spans = await eventually(async () => {
      const got = collector.spans;
      const groups = got.filter((s) => s.name === 'RunActivity:runJudgedRolloutGroup');
      const calls = got.filter((s) => s.name === 'mockworld.model_call');
      // The group's activity paid both rollouts' policy calls (the second judge call, on the same
      // transcript, is a cache answer).
      const paid =
        groups.length === 1 && calls.filter((c) => c.parentSpanId === groups[0]!.spanId).length >= 2;
      return paid && got.some((s) => s.name === 'RunWorkflow:GrpoGroup') && got;
    }, 60_000);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const ancestors = (span: Span): string[] => {
      const names: string[] = [];
      for (
        let p = span.parentSpanId && byId.get(span.parentSpanId);
        p;
        p = p.parentSpanId && byId.get(p.parentSpanId)
      )
        names.push(p.name);
      return names;
    };
    const workflow = spans.find((s) => s.name === 'RunWorkflow:GrpoGroup')!;
    // Each model call (the policy's turns, the judge) sits in the rollouts' activity of the group's workflow.
    for (const call of spans.filter((s) => s.name === 'mockworld.model_call')) {
      expect(call.traceId).toBe(workflow.traceId);
      const chain = ancestors(call);
      expect(chain[0]).toBe('RunActivity:runJudgedRolloutGroup');
      expect(chain).toContain('StartActivity:runJudgedRolloutGroup');
      expect(chain).toContain('RunWorkflow:GrpoGroup');
    }
  });
});
