import { randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import os from 'node:os';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stopChild } from '../../deploy/processes.js';
import { SLOT_LOCK_CLASS, WORKER_PROCESS_LOST } from '../../workers/attempt-journal.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';
import type { HoldProbe } from './worker-restart.workflows.js';

/**
 * The attempt journal (workers/attempt-journal.ts) end to end: worker processes on one host and
 * queue, one SIGKILLed while it runs an attempt. The probe's heartbeat timeout (30 minutes) is far
 * longer than this test, so the killed attempt can only be retried because the process started
 * after the kill took the dead one's slot and failed it; the live worker's attempt must not be.
 */
describe('a worker process restarted after a SIGKILL', () => {
  let db: TestDatabase;
  let dir: string;
  let connection: Connection;
  const workers: WorkerProcess[] = [];
  const taskQueue = `restart-${randomBytes(4).toString('hex')}`;

  const startWorker = () => {
    const worker = startWorkerProcess(
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        DATABASE_URL: db.url,
        TASK_QUEUE: taskQueue,
        HOLD_DIR: dir,
      },
      'test/integration/worker-restart.worker',
    );
    workers.push(worker);
    return worker;
  };
  /** Worker slots held in the test's database (one per worker process that has started polling). */
  const slotsHeld = async () =>
    (
      await query<{ n: number }>(
        db.url,
        `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
          WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.granted AND d.datname = current_database()`,
        [SLOT_LOCK_CLASS],
      )
    )[0]!.n;
  const running = (workflowId: string, attempt: number) =>
    readdirSync(dir)
      .filter((f) => f.startsWith(`running-${workflowId}-${attempt}-`))
      .map((f) => Number(f.split('-').at(-1)));

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-restart-'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.kill()));
    await connection?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('has its lost attempt retried at once, and leaves a live worker’s attempt alone', async () => {
    const client = new Client({ connection });
    const start = (workflowId: string) =>
      client.workflow.start<typeof HoldProbe>('HoldProbe', { taskQueue, workflowId });

    // A runs the first probe's attempt 1; B starts beside it (another slot of this host and queue).
    const a = startWorker();
    await eventually(async () => (await slotsHeld()) === 1, 120_000);
    const first = await start(`${taskQueue}-first`);
    await eventually(async () => running(first.workflowId, 1).length === 1, 60_000);
    expect(running(first.workflowId, 1)).toEqual([a.child.pid]);
    const b = startWorker();
    await eventually(async () => (await slotsHeld()) === 2, 120_000);

    // A dies with its attempt; B alone then takes the second probe.
    await a.kill();
    await eventually(async () => (await slotsHeld()) === 1, 30_000);
    const second = await start(`${taskQueue}-second`);
    await eventually(async () => running(second.workflowId, 1).length === 1, 60_000);
    expect(running(second.workflowId, 1)).toEqual([b.child.pid]);

    // C takes A's free slot and fails A's attempt: attempt 2 starts long before any heartbeat timeout.
    const c = startWorker();
    await eventually(async () => running(first.workflowId, 2).length === 1, 120_000);
    expect(running(second.workflowId, 2)).toEqual([]); // B's live attempt was not failed

    writeFileSync(path.join(dir, 'release'), '');
    expect((await first.result()).attempt).toBe(2);
    expect(await second.result()).toEqual({ attempt: 1, pid: b.child.pid });

    // A retried attempt's failure is recorded on the started event of the attempt that completed.
    const started = (await first.fetchHistory()).events!.filter((e) => e.activityTaskStartedEventAttributes);
    expect(started.map((e) => e.activityTaskStartedEventAttributes!.attempt)).toEqual([2]);
    const failure = started[0]!.activityTaskStartedEventAttributes!.lastFailure!;
    expect(failure.applicationFailureInfo?.type).toBe(WORKER_PROCESS_LOST);
    expect(failure.message).toContain(`pid ${a.child.pid}`);

    // Ended attempts leave no rows; workers stopped gracefully release their slots.
    await eventually(async () => (await query(db.url, 'SELECT 1 FROM worker_attempts')).length === 0, 30_000);
    await Promise.all([b, c].map((worker) => stopChild(worker.child, { graceMs: 120_000 })));
    expect(await slotsHeld()).toBe(0);
  }, 420_000);
});
