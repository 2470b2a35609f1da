import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { SPEC_KINDS } from '../../schemas/specs.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { lostOrAltered, snapshot, type Snapshot } from './db-snapshot.js';

const exec = promisify(execFile);

/** Bad fields every kind gets, with what the error must name for each. */
const COMMON_BAD = { bogusField: { nested: true }, 'key\u0000with-nul': 1 };
const COMMON_NAMED = ['bogusField', 'key\u0000with-nul'];

/** Extra absurd values of the kinds known here, and the fields they must be named by. */
const KIND_BAD: Record<string, { bad: Record<string, unknown>; named: string[] }> = {
  Smoke: { bad: { steps: 1e12, prompt: 'nul\u0000' }, named: ['steps', 'prompt'] },
  Synthesis: {
    bad: { tasks: 1e12, demonstrationsPerTask: -4, personas: { path: '' } },
    named: ['tasks', 'demonstrationsPerTask', 'personas.path'],
  },
  GrpoTraining: {
    bad: { globalBatch: 10, miniBatch: 3, rolloutsPerTask: -1, dataset: {} },
    named: ['miniBatch', 'rolloutsPerTask', 'dataset.synthesisRunId', 'policy'],
  },
};

describe('invalid specs started as workflows (the Temporal UI path) and from the CLI', () => {
  let db: TestDatabase;
  let tw: TestWorker;
  let dir: string;
  let before: Snapshot;

  beforeAll(async () => {
    db = await createTestDatabase('mw_badspec');
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-badspec-cli-'));
    // Something stored already, which no refused spec may touch.
    await query(
      db.url,
      `INSERT INTO runs (run_id, kind, spec, status) VALUES ('kept-run', 'Smoke', '{"kind":"Smoke"}', 'completed')`,
    );
    before = await snapshot(db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it.each(SPEC_KINDS)(
    '%s: a workflow started with an invalid spec fails at once, naming every bad field',
    async (kind) => {
      const extra = KIND_BAD[kind] ?? { bad: {}, named: [] };
      const handle = await tw.client.workflow.start(kind, {
        args: [{ ...COMMON_BAD, ...extra.bad }],
        taskQueue: tw.taskQueue,
        workflowId: `badspec-${kind}-${Date.now()}`,
      });
      const error = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(WorkflowFailedError);
      const message = String((error as WorkflowFailedError).cause?.message);
      expect(message).toContain(`Invalid ${kind} spec`);
      for (const field of [...COMMON_NAMED, ...extra.named]) expect(message, field).toContain(field);
      const description = await handle.describe();
      expect(description.status.name).toBe('FAILED');
      expect(description.historyLength).toBeLessThan(10); // no activity was scheduled, nothing retried
    },
  );

  it('refuses a spec naming a missing, unreadable or outside file at once, naming each field, reading and recording nothing', async () => {
    const folder = path.join(dir, 'a-folder.jsonl');
    await mkdir(folder, { recursive: true });
    const missing = path.join(dir, 'no-such-personas.jsonl');
    // Outside the workers' data roots (the test folder is one: vitest.config.ts), a FIFO: a worker
    // that opened it to read would hang there, and the refusal would not come at once.
    const outsideDir = await mkdtemp('/var/tmp/mockworld-outside-roots-');
    const fifo = path.join(outsideDir, 'personas.jsonl');
    await exec('mkfifo', [fifo]);
    const cases = [
      {
        kind: 'Synthesis',
        spec: { kind: 'Synthesis', tasks: 2, personas: { path: missing } },
        named: [new RegExp(`personas\\.path: cannot read "${missing}" \\(ENOENT\\)`)],
      },
      {
        kind: 'Synthesis',
        spec: {
          kind: 'Synthesis',
          tasks: 2,
          personas: { path: fifo },
          reasoning: { seeds: { path: '/etc/passwd' }, problems: 2 },
          templates: { overrides: { judge: '../../../../etc/shadow' } },
        },
        named: [
          new RegExp(
            `personas\\.path: The personas\\.path file "${fifo}" lies outside this worker's data roots`,
          ),
          /reasoning\.seeds\.path: The reasoning\.seeds\.path file "\/etc\/passwd" lies outside/,
          /templates\.overrides\.judge: The templates\.overrides\.judge file "\.\.\/\.\.\/\.\.\/\.\.\/etc\/shadow" lies outside/,
          /MOCKWORLD_DATA_ROOTS/,
        ],
      },
      {
        kind: 'ScalingStudy',
        spec: {
          kind: 'ScalingStudy',
          questions: { seedPool: 'no/such/seeds.jsonl', testSet: folder },
          student: { base: { kind: 'tiny' }, endpoint: { baseUrl: 'http://127.0.0.1:1/v1', model: 'm' } },
        },
        named: [
          /questions\.seedPool: Cannot find the questions\.seedPool file "no\/such\/seeds\.jsonl"/,
          /questions\.testSet: .* is not a regular file/,
        ],
      },
    ];
    for (const { kind, spec, named } of cases) {
      const workflowId = `badspec-files-${kind}-${Date.now()}`;
      const handle = await tw.client.workflow.start(kind, {
        args: [spec],
        taskQueue: tw.taskQueue,
        workflowId,
      });
      const error = (await handle.result().catch((e: unknown) => e)) as WorkflowFailedError;
      expect(error).toBeInstanceOf(WorkflowFailedError);
      const message = String(error.cause?.message);
      expect(message).toContain(
        `Invalid ${kind} spec: The spec names files this worker cannot read; nothing was started.`,
      );
      for (const pattern of named) expect(message).toMatch(pattern);
      expect((await handle.describe()).status.name).toBe('FAILED');
      const runs = await query(db.url, 'SELECT run_id FROM runs WHERE run_id = $1', [workflowId]);
      expect(runs).toEqual([]); // refused before the run was recorded
    }
    await rm(outsideDir, { recursive: true, force: true });
  });

  it('fails at once with a bounded message for a ~1 MB spec, and the client refuses one over the blob limit', async () => {
    const handle = await tw.client.workflow.start('Smoke', {
      args: [{ prompt: 'p'.repeat(1024 * 1024), ['k'.repeat(200_000)]: 1 }],
      taskQueue: tw.taskQueue,
      workflowId: `badspec-1mb-${Date.now()}`,
    });
    const error = (await handle.result().catch((e: unknown) => e)) as WorkflowFailedError;
    const message = String(error.cause?.message);
    expect(message).toMatch(/prompt: Too big/);
    expect(message.length).toBeLessThan(3_000);

    const id = `badspec-3mb-${Date.now()}`;
    const refused = await tw.client.workflow
      .start('Smoke', {
        args: [{ prompt: 'p'.repeat(3 * 1024 * 1024) }],
        taskQueue: tw.taskQueue,
        workflowId: id,
      })
      .then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: unknown },
      );
    expect(String(refused?.cause)).toMatch(/Blob data size exceeds limit/);
    await expect(tw.client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  it('`mockworld start` refuses hostile spec files with exit code 2, naming the fields, starting nothing', async () => {
    const write = async (name: string, content: string) => {
      const file = path.join(dir, name);
      await writeFile(file, content);
      return file;
    };
    // One file through the real CLI process (each costs a tsx start on a 2-core machine); the
    // reader it uses is exercised with every other hostile file (bombs, 10 MB, /dev/zero) in specs.test.ts.
    const cases: Array<{ file: string; expected: RegExp[] }> = [
      {
        file: await write(
          'synthesis.yaml',
          [
            'kind: Synthesis',
            'tasks: 1e12',
            'demonstrationsPerTask: -4',
            'personas: {}',
            '__proto__: {tasks: 1}',
            'concurrency: "8"',
            'name: "nul\\0byte"',
          ].join('\n'),
        ),
        expected: [
          /tasks: Too big/,
          /demonstrationsPerTask/,
          /personas\.path/,
          /__proto__/,
          /concurrency/,
          /name: contains a NUL/,
        ],
      },
    ];
    const results = await Promise.all(
      cases.map(async ({ file }, i) => {
        const id = `badspec-cli-${i}-${Date.now()}`;
        const result = await exec(path.join(REPO_ROOT, 'bin', 'mockworld'), ['start', file, '--id', id], {
          env: {
            ...process.env,
            TEMPORAL_ADDRESS: inject('temporalAddress'),
            DATABASE_URL: db.url,
            MOCKWORLD_TASK_QUEUE: tw.taskQueue,
          },
        }).then(
          () => ({ code: 0, stderr: '' }),
          (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
        );
        return { id, ...result };
      }),
    );
    for (const [i, { id, code, stderr }] of results.entries()) {
      expect(code, stderr).toBe(2);
      for (const pattern of cases[i]!.expected) expect(stderr).toMatch(pattern);
      expect(stderr.length).toBeLessThan(5_000);
      await expect(tw.client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    }
  });

  it('left everything stored before exactly as it was', async () => {
    expect(lostOrAltered(before, await snapshot(db.url))).toEqual([]);
    expect((await snapshot(db.url)).get('runs')).toEqual(before.get('runs'));
  });
});
