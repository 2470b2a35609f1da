import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ActivityFailure,
  Client,
  Connection,
  WorkflowFailedError,
  type WorkflowHandle,
} from '@temporalio/client';
import { RetryState } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SPEC_FILE_ERROR } from '../../activities/data-files.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { eventually } from '../../testkit/temporal.js';

const EXAMPLES = path.join(REPO_ROOT, 'examples');

/** The ids of a JSONL file's lines, in order. */
const idsOf = (file: string): string[] =>
  readFileSync(path.join(EXAMPLES, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => String((JSON.parse(line) as { id: string | number }).id));

/** Whether the run's history holds a completed activity of this type. */
async function activityCompleted(handle: WorkflowHandle, activityType: string): Promise<boolean> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType)
      .map((e) => String(e.eventId)),
  );
  return events.some(
    (e) =>
      e.activityTaskCompletedEventAttributes &&
      scheduled.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId)),
  );
}

/**
 * What an example shows once started from the UI, by kind: far enough that every data file it
 * names was found and read (a kind with no case here fails the test, so a new example is covered).
 */
const SHOWN: Record<
  string,
  (handle: WorkflowHandle, spec: Record<string, any>, db: string) => Promise<void>
> = {
  async Synthesis(handle, spec, db) {
    const expected = idsOf(spec.personas.path).slice(0, spec.tasks);
    await eventually(async () => {
      const rows = await query<{ persona_id: string }>(
        db,
        'SELECT persona_id FROM synthesis_personas WHERE run_id = $1 ORDER BY idx',
        [handle.workflowId],
      );
      return rows.length === expected.length && rows.map((r) => r.persona_id).join() === expected.join();
    }, 90_000);
  },
  async ScalingStudy(handle, spec, db) {
    const expected = {
      seed: idsOf(spec.questions.seedPool).length,
      test: idsOf(spec.questions.testSet).length,
    };
    await eventually(async () => {
      const rows = await query<{ source: string; n: number }>(
        db,
        'SELECT source, count(*)::int AS n FROM study_questions WHERE study_id = $1 GROUP BY source',
        [handle.workflowId],
      );
      const got = Object.fromEntries(rows.map((r) => [r.source, r.n]));
      return got.seed === expected.seed && got.test === expected.test;
    }, 90_000);
  },
  // Names no data file (its dataset is stored tasks, its policy a server): accepted as it is, the
  // run claims its id; going further takes the Python trainer worker (docs/grpo.md).
  async GrpoTraining(handle) {
    await eventually(() => activityCompleted(handle, 'recordRunStart'), 90_000);
  },
  // Names no data file: it runs to the end on the worker's model.
  async Smoke(handle, spec) {
    expect(await handle.result()).toMatchObject({ steps: spec.steps });
  },
};

describe('the examples started as the Temporal UI starts them (JSON input, no CLI)', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let workerDir: string;
  let home: string;
  let connection: Connection;
  let client: Client;
  let worker: ChildProcess | undefined;
  let workerOutput = '';
  const taskQueue = `examples-ui-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    // A worker started from a folder that holds none of the examples' files, with no
    // MOCKWORLD_DATA_DIR: the shipped examples/ are where it must find them.
    workerDir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-worker-cwd-'));
    home = await mkdtemp(path.join(os.tmpdir(), 'mockworld-examples-home-'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: db.url,
      MOCKWORLD_HOME: home,
      // The examples name no endpoint: their roles use the worker's model, here the scripted one.
      MOCKWORLD_MODEL_URL: models.url,
      MOCKWORLD_MODEL_NAME: 'scripted',
    };
    delete env.MOCKWORLD_DATA_DIR;
    worker = spawn(path.join(REPO_ROOT, 'bin', 'mockworld'), ['worker', '--task-queue', taskQueue], {
      cwd: workerDir,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    worker.stderr!.on('data', (chunk: Buffer) => (workerOutput = (workerOutput + chunk).slice(-4_000)));
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection });
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) {
      const gone = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await gone;
    }
    await connection?.close();
    await models?.close();
    await db?.drop();
    await rm(workerDir, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  });

  const examples = readdirSync(EXAMPLES).filter((name) => /\.ya?ml$/.test(name));

  it.each(examples)('%s finds its files', async (name) => {
    // The JSON the UI's Start Workflow form sends: the YAML document as it is, paths not resolved.
    const spec = JSON.parse(JSON.stringify(parseYaml(readFileSync(path.join(EXAMPLES, name), 'utf8'))));
    const shown = SHOWN[spec.kind];
    expect(shown, `no case for kind ${spec.kind} in this test`).toBeDefined();
    const handle = await client.workflow.start(spec.kind, {
      args: [spec],
      taskQueue,
      workflowId: `${taskQueue}-${name.replace(/\W/g, '-')}`,
    });
    try {
      await shown!(handle, spec, db.url);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nworker's last output:\n${workerOutput}`);
    } finally {
      await handle.terminate('the test saw what it needed').catch(() => undefined);
    }
  });

  it('fails a run whose relative file is in neither place, saying where it looked and how to fix it', async () => {
    const handle = await client.workflow.start('Synthesis', {
      args: [{ kind: 'Synthesis', personas: { path: 'mine/personas.jsonl' }, tasks: 1 }],
      taskQueue,
      workflowId: `${taskQueue}-missing`,
    });
    const error = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    // Refused at start by the spec-file check, not retried: every attempt would look in the same places.
    const chain: Error[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e);
    const activity = chain.find((e): e is ActivityFailure => e instanceof ActivityFailure);
    expect(activity?.retryState).toBe(RetryState.NON_RETRYABLE_FAILURE);
    const cause = chain.at(-1) as Error & { type?: string };
    expect(cause.type).toBe(SPEC_FILE_ERROR);
    expect(cause.message).toContain(
      'personas.path: Cannot find the personas.path file "mine/personas.jsonl"',
    );
    expect(cause.message).toContain(path.join(workerDir, 'mine/personas.jsonl'));
    expect(cause.message).toContain(path.join(EXAMPLES, 'mine/personas.jsonl'));
    expect(cause.message).toContain('MOCKWORLD_DATA_DIR');
    // The run failed at its start.
    expect(await client.workflow.getHandle(`${taskQueue}-missing`).describe()).toMatchObject({
      status: { name: 'FAILED' },
    });
  });
});
