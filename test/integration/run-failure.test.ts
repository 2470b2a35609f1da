import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { MockworldState } from '../../workflows/search-attributes.js';
import { MOCKWORLD_WORKFLOWS_PATH } from '../../workers/plugin.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { recordHistory } from '../../testkit/vitest/histories.js';

/**
 * A valid study spec; its questions are never read: the start-up file check is passed here (a
 * disk that goes away after the start) and preparing the study fails.
 */
const STUDY_SPEC = {
  questions: { seedPool: '/nonexistent/seeds.jsonl', testSet: '/nonexistent/test.jsonl' },
  student: {
    base: { kind: 'tiny', seed: 0 },
    endpoint: { baseUrl: 'http://127.0.0.1:9/v1', model: 'policy' },
  },
  budgets: [1, 2],
};

describe('a pipeline that fails', () => {
  let db: TestDatabase;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `failing-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase();
    nativeConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      activities: {
        ...createActivities({ databaseUrl: db.url }),
        async checkSpecFiles() {},
        async prepareStudy() {
          throw ApplicationFailure.nonRetryable('the seed pool disk is gone', 'StudyInputError');
        },
      },
    });
    running = worker.run();
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await nativeConnection?.close();
    await connection?.close();
    await db?.drop();
  });

  it('records failed, with the cause, in its runs row and its MockworldState search attribute', async () => {
    const client = new Client({ connection });
    const workflowId = `study-failing-${Date.now()}`;
    const handle = await client.workflow.start('ScalingStudy', { args: [STUDY_SPEC], taskQueue, workflowId });
    expect(await handle.result().catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
    const [row] = await query<{ kind: string; status: string; summary: { failure: string } }>(
      db.url,
      'SELECT kind, status, summary FROM runs WHERE run_id = $1',
      [workflowId],
    );
    expect(row).toMatchObject({ kind: 'ScalingStudy', status: 'failed' });
    expect(row!.summary.failure).toContain('the seed pool disk is gone');
    expect((await handle.describe()).typedSearchAttributes.get(MockworldState)).toBe('failed');
    await recordHistory(workflowId, 'scaling-study-failed');
  });
});
