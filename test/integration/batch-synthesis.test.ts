import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { scriptedOutcome, scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';
import { startOwnTemporal, type OwnTemporal } from '../../testkit/own-temporal.js';

const TASKS = 6;
const WORKFLOW_ID = 'synthesis-batch-vs-online';

/**
 * Batch teacher stages and judges (the demonstrations' turns stay online) through everything that can go wrong while a run waits for its jobs: the first job
 * expires half-answered, the worker is SIGKILLed while a job is out, and the Temporal server is
 * killed and restarted. The run ends as the same run done online ends (same tasks, rubrics,
 * coverage and ledger keys), and no batch line is billed twice.
 */
describe('a Synthesis run with batch judges', () => {
  let dir: string;
  let temporal: OwnTemporal;
  let models: ModelServer;
  let online: TestDatabase;
  let batch: TestDatabase;
  let worker: WorkerProcess | undefined;
  const taskQueue = 'batch-synthesis';

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-batch-'));
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(TASKS, false));
    temporal = await startOwnTemporal(inject('temporalCli'), dir);
    models = await startModelServer({ script: synthesisScript });
    [online, batch] = await Promise.all([
      createTestDatabase('mw_batch_online'),
      createTestDatabase('mw_batch'),
    ]);
  });
  afterAll(async () => {
    await worker?.kill();
    await temporal?.stop();
    await models?.close();
    await online?.drop();
    await batch?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const workerOn = (databaseUrl: string) =>
    startWorkerProcess({
      TEMPORAL_ADDRESS: temporal.address,
      DATABASE_URL: databaseUrl,
      MOCKWORLD_TASK_QUEUE: taskQueue,
      MOCKWORLD_HOME: dir,
    });

  async function start(mode: Record<string, unknown>) {
    const connection = await Connection.connect({ address: temporal.address });
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const handle = await new Client({ connection }).workflow.start('Synthesis', {
      args: [
        {
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: TASKS,
          demonstrationsPerTask: 2,
          maxTurns: 6,
          concurrency: 3,
          models: {
            teacher: { ...role, ...mode },
            toolSimulator: role,
            userSimulator: role,
            rubricExtractor: { ...role, ...mode },
          },
        },
      ],
      taskQueue,
      workflowId: WORKFLOW_ID, // the same in both databases, so the prompts and cache keys are too
    });
    return { handle, connection };
  }

  const outcomes = (url: string) =>
    query(url, 'SELECT idx, stage, reject_reason, rubric, coverage FROM tasks ORDER BY idx');
  const ledgerKeys = async (url: string) =>
    (await query<{ cache_key: string }>(url, 'SELECT cache_key FROM llm_calls ORDER BY cache_key')).map(
      (r) => r.cache_key,
    );

  it('ends as the online run ends, through an expired job, a worker SIGKILL and a Temporal restart', async () => {
    worker = workerOn(online.url);
    const first = await start({});
    const onlineSummary = await first.handle.result();
    await first.connection.close();
    await worker.kill();
    const kept = Array.from({ length: TASKS }, (_, i) => scriptedOutcome(i)).filter(
      (o) => o === 'kept',
    ).length;
    expect(onlineSummary).toMatchObject({ tasks: TASKS, kept, failed: 0 });

    models.batches.injectFaults({ kind: 'expire', answeredFraction: 0.5 });
    models.batches.setCompletionDelay(1_500);
    worker = workerOn(batch.url);
    const second = await start({ mode: 'batch', batch: { maxWaitSeconds: 1, pollSeconds: 0.25 } });

    // A worker lost while a job is out: the job goes on at the provider, and the retried
    // activities find their requests already sent.
    await eventually(
      async () =>
        (await query(batch.url, "SELECT 1 FROM llm_batch_jobs WHERE state = 'submitted'")).length > 0,
      120_000,
      50,
    );
    await worker.kill();
    worker = workerOn(batch.url);
    // The Temporal server lost while the run waits on its jobs.
    await eventually(
      async () => (await query(batch.url, "SELECT 1 FROM llm_batch_jobs WHERE state = 'done'")).length > 0,
      120_000,
      100,
    );
    await temporal.crashAndRestart();

    const batchSummary = await second.handle.result();
    // The kill cut activities that were waiting on a job: some task retried one.
    const attempts = await Promise.all(
      Array.from({ length: TASKS }, async (_, i) => {
        const history = await new Client({ connection: second.connection }).workflow
          .getHandle(`${WORKFLOW_ID}-task-${String(i).padStart(5, '0')}`)
          .fetchHistory();
        return Math.max(...history.events!.map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 1));
      }),
    );
    expect(Math.max(...attempts)).toBeGreaterThan(1);
    await second.connection.close();
    expect(batchSummary).toMatchObject({ tasks: TASKS, kept, failed: 0 });
    expect(await outcomes(batch.url)).toEqual(await outcomes(online.url));
    expect(await ledgerKeys(batch.url)).toEqual(await ledgerKeys(online.url));

    const billed = Object.values(models.batches.stats.billedByCustomId);
    expect(billed.filter((n) => n > 1)).toEqual([]);
    const [calls] = await query<{ batched: number; expired: number; open: number }>(
      batch.url,
      `SELECT (SELECT count(*)::int FROM llm_calls WHERE batch_job_id IS NOT NULL) AS batched,
              (SELECT count(*)::int FROM llm_batch_jobs WHERE provider_status = 'expired') AS expired,
              (SELECT count(*)::int FROM llm_batch_lines WHERE state NOT IN ('answered', 'online')) AS open`,
    );
    // Every teacher stage, coverage verdict, control and rubric came from a job, one ledger row
    // each; the demonstrations' turns stayed online.
    expect(calls!.batched).toBe(billed.length);
    const byRole = await query<{ role: string; batched: number; online: number }>(
      batch.url,
      `SELECT role, count(batch_job_id)::int AS batched, count(*) FILTER (WHERE batch_job_id IS NULL)::int AS online
         FROM llm_calls GROUP BY role ORDER BY role`,
    );
    expect(byRole).toEqual([
      { role: 'coverage-judge', batched: expect.any(Number), online: 0 },
      { role: 'coverage-judge-control', batched: expect.any(Number), online: 0 },
      { role: 'rubric-extractor', batched: expect.any(Number), online: 0 },
      // Stages (a)-(c) in jobs, the demonstrations' turns online: one run mixes both.
      { role: 'teacher', batched: expect.any(Number), online: expect.any(Number) },
      { role: 'tool-simulator', batched: 0, online: expect.any(Number) },
      { role: 'user-simulator', batched: 0, online: expect.any(Number) },
    ]);
    const teacher = byRole.find((r) => r.role === 'teacher')!;
    expect(teacher.batched).toBeGreaterThan(0);
    expect(teacher.online).toBeGreaterThan(0);
    expect(calls!.expired).toBe(1);
    expect(calls!.open).toBe(0);
  }, 600_000);
});
