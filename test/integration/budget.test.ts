/**
 * Money (issue 20, point 3): endpoint prices make each paid call's cost a ledger column; a run
 * whose budget is smaller than its cost pauses itself with the reason recorded, a worker killed
 * while it waits loses nothing, and after `mockworld budget` raises it the run resumes and
 * completes without paying any answer twice.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';
import { statusQuery } from '../../workflows/controls.js';

const PRICES = { inputPerMillion: 2, cachedInputPerMillion: 1, outputPerMillion: 8 };
const STEPS = 4;

describe('a run with a budget', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let connection: Connection;
  let client: Client;
  let worker: WorkerProcess | undefined;
  let dir: string;
  const taskQueue = `budget-${randomBytes(4).toString('hex')}`;
  const env = () => ({
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DATABASE_URL: db.url,
    MOCKWORLD_TASK_QUEUE: taskQueue,
    MOCKWORLD_HOME: dir,
  });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-budget-'));
    db = await createTestDatabase();
    models = await startModelServer({
      script: (request) => `answer to step ${request.index}: ${'x'.repeat(40)}`,
    });
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection });
  });
  afterAll(async () => {
    await worker?.kill();
    await connection?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('pauses at its budget with the reason, survives a worker kill, resumes when raised, pays each answer once', async () => {
    worker = startWorkerProcess(env());
    const runId = `budget-smoke-${randomBytes(3).toString('hex')}`;
    const handle = await client.workflow.start('Smoke', {
      args: [
        {
          kind: 'Smoke',
          name: 'budget',
          prompt: 'hello',
          steps: STEPS,
          budgetUsd: 0.000001, // less than one call costs
          model: {
            endpoint: { baseUrl: models.url, model: 'scripted', prices: PRICES },
            sampling: { maxTokens: 32 },
          },
        },
      ],
      taskQueue,
      workflowId: runId,
    });

    // One call is paid, then the run pauses itself before the next, saying why and how to go on.
    const paused = await eventually(async () => {
      const status = await handle.query(statusQuery);
      return status.state === 'paused' && status;
    }, 90_000);
    expect(paused.done).toBe(0);
    expect(paused.stage).toMatch(
      new RegExp(
        `^budget reached: spent \\$[0-9.e-]+ of \\$0\\.00000100; raise it with \`mockworld budget ${runId} <usd>\``,
      ),
    );
    const [run] = await query<{ status: string; pause_reason: string }>(
      db.url,
      'SELECT status, pause_reason FROM runs WHERE run_id = $1',
      [runId],
    );
    expect(run).toEqual({ status: 'paused', pause_reason: paused.stage });
    const [first] = await query<{ prompt_tokens: number; completion_tokens: number; cost_usd: number }>(
      db.url,
      'SELECT prompt_tokens, completion_tokens, cost_usd FROM llm_calls WHERE run_id = $1',
      [runId],
    );
    expect(first!.cost_usd).toBeCloseTo((first!.prompt_tokens * 2 + first!.completion_tokens * 8) / 1e6, 12);
    expect(models.requestCount()).toBe(1);

    // The worker dies while the run waits; a new one takes over.
    await worker.kill();
    worker = startWorkerProcess(env());

    const raised = await runCli(env(), 'budget', runId, '1');
    expect(raised.code, raised.stderr).toBe(0);
    expect(raised.stdout).toContain(`budget of ${runId} set to $1`);
    const summary = (await handle.result()) as { steps: number; cachedSteps: number };
    expect(summary.steps).toBe(STEPS);

    // Every answer paid once: one upstream request and one ledger row per step.
    expect(models.requestCount()).toBe(STEPS);
    const ledger = await query<{ calls: number; cost: number }>(
      db.url,
      'SELECT count(*)::int AS calls, sum(cost_usd)::float8 AS cost FROM llm_calls WHERE run_id = $1',
      [runId],
    );
    expect(ledger[0]!.calls).toBe(STEPS);
    const [after] = await query<{ status: string; pause_reason: string | null }>(
      db.url,
      'SELECT status, pause_reason FROM runs WHERE run_id = $1',
      [runId],
    );
    expect(after).toEqual({ status: 'completed', pause_reason: null });

    // The report shows the cost per role and for the run.
    const report = await runCli(env(), 'report', runId, '--json');
    expect(report.code, report.stderr).toBe(0);
    const usage = JSON.parse(report.stdout).usage as { role: string; costUsd: number }[];
    expect(usage.reduce((sum, u) => sum + u.costUsd, 0)).toBeCloseTo(ledger[0]!.cost, 12);
  });
});
