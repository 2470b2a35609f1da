import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SHUTDOWN_CALL_GRACE_MS } from '../../activities/cancellation.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

/**
 * Cancellation reaches running work (issue 33 point 4): a model call of a cancelled run is cut
 * within the activity's heartbeat interval (LONG_ACTIVITY: heartbeat timeout 20 s, so a heartbeat
 * at most every 16 s), not left to run its course, and a worker's SIGTERM does not wait on it. The
 * model never answers within the test (5 minutes a call): every bound below is far under it.
 */
const MODEL_LATENCY_MS = 300_000;
const HEARTBEAT_TIMEOUT_MS = 20_000;

describe('cancelling a run', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let dir: string;
  let connection: Connection;
  let worker: WorkerProcess | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-cancel-'));
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(2, false));
    [db, models] = await Promise.all([
      createTestDatabase('mw_cancel'),
      startModelServer({ script: synthesisScript, latencyMs: MODEL_LATENCY_MS }),
    ]);
    connection = await Connection.connect({ address: inject('temporalAddress') });
    env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: `cancel-${randomBytes(4).toString('hex')}`,
      MOCKWORLD_HOME: dir,
    };
    worker = startWorkerProcess(env);
  });
  afterAll(async () => {
    await worker?.kill();
    await connection?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const startRun = (name: string) => {
    const role = { endpoint: { baseUrl: models.url, model: name } };
    return new Client({ connection }).workflow.start('Synthesis', {
      args: [
        {
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: 1,
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: env.MOCKWORLD_TASK_QUEUE!,
      workflowId: `${name}-${randomBytes(4).toString('hex')}`,
    });
  };
  const cancelled = async (handle: Awaited<ReturnType<typeof startRun>>) => {
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  };

  it("cuts the cancelled run's model call within the activity's heartbeat interval", async () => {
    const handle = await startRun('cancel-call');
    await eventually(async () => models.stats.inFlight > 0, 60_000, 50);
    const cancelledAt = Date.now();
    await handle.cancel();
    await eventually(async () => models.stats.inFlight === 0, HEARTBEAT_TIMEOUT_MS * 2, 50);
    console.log(
      `[cancel] the model call was cut ${((Date.now() - cancelledAt) / 1000).toFixed(1)} s after the cancel`,
    );
    expect(models.stats.answered).toBe(0); // closed by the worker, unanswered
    await cancelled(handle);
  });

  it('lets a SIGTERMed worker exit without waiting on a cancelled run’s call', async () => {
    const handle = await startRun('cancel-then-stop');
    await eventually(async () => models.stats.inFlight > 0, 60_000, 50);
    // Cancel and stop at once: the activity hears of the shutdown before its next heartbeat brings
    // the cancellation, so the call on the wire gets the shutdown's grace (activities/cancellation.ts),
    // and is cut then: the worker does not wait out the call's 5 minutes.
    await handle.cancel();
    const stoppedAt = Date.now();
    const exited = new Promise<number | null>((resolve) => worker!.child.once('exit', resolve));
    worker!.child.kill('SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise<'waiting'>((resolve) =>
        setTimeout(() => resolve('waiting'), SHUTDOWN_CALL_GRACE_MS + 30_000),
      ),
    ]);
    console.log(
      `[cancel] the SIGTERMed worker exited ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s later`,
    );
    expect(code).toBe(0);
    expect(models.stats.inFlight).toBe(0);
    worker = startWorkerProcess(env); // the cancellation completes on a worker
    await cancelled(handle);
  });
});
