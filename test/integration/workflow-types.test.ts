import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pauseSignal, statusQuery } from '../../workflows/controls.js';
import { SPEC_KINDS } from '../../schemas/specs.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { recordHistory } from '../../testkit/vitest/histories.js';

/** What the Temporal UI reads to list a running workflow's signals and queries. */
interface HandlerMetadata {
  readonly definition: {
    readonly signalDefinitions: readonly { name: string; description?: string }[];
    readonly queryDefinitions: readonly { name: string; description?: string }[];
  };
}

/** Signals a user sends; every other signal of a mockworld workflow must be named internal. */
const USER_SIGNALS = ['pause', 'resume', 'stop', 'budget'];
const INTERNAL_PREFIX = 'mockworld.internal.';
/** An endpoint nothing listens on: the paused runs below never call a model. */
const NO_MODEL = { endpoint: { baseUrl: 'http://127.0.0.1:9/v1', model: 'none' } };

describe('the workflow types a worker with the plugin serves', () => {
  let db: TestDatabase;
  let tw: TestWorker;
  let dir: string;
  const homeBefore = process.env.MOCKWORLD_HOME;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-types-'));
    process.env.MOCKWORLD_HOME = dir;
    db = await createTestDatabase();
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await db?.drop();
    if (homeBefore === undefined) delete process.env.MOCKWORLD_HOME;
    else process.env.MOCKWORLD_HOME = homeBefore;
    await rm(dir, { recursive: true, force: true });
  });

  it('fails a misspelt workflow type at once, non-retryably, listing the kinds it serves', async () => {
    const handle = await tw.client.workflow.start('Synthesys', {
      args: [{ name: 'typo' }],
      taskQueue: tw.taskQueue,
      workflowId: `unknown-type-${Date.now()}`,
    });
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('UnknownWorkflowType');
    expect((cause as ApplicationFailure).nonRetryable).toBe(true);
    expect(cause!.message).toContain("'Synthesys'");
    expect(cause!.message).toContain('Smoke, Synthesis, GrpoTraining, ScalingStudy');
    expect(SPEC_KINDS).toEqual(expect.arrayContaining(['Evaluation', 'SftTraining']));
    expect((cause as ApplicationFailure).details).toEqual([
      { requested: 'Synthesys', kinds: [...SPEC_KINDS] }, // every kind a user starts, SftTraining too
    ]);
    const description = await handle.describe();
    expect(description.status.name).toBe('FAILED');
    // One workflow task, then the failure: no retried workflow tasks in between.
    expect(description.historyLength).toBeLessThan(8);
    await recordHistory(handle.workflowId, 'unknown-workflow-type');
  });

  it('still starts the internal child types by name', async () => {
    // A group of zero rollouts schedules nothing: it shows that GrpoGroup resolves to itself.
    const judged = await tw.client.workflow.execute('GrpoGroup', {
      args: [
        {
          runId: 'types',
          iteration: 0,
          taskId: 'none',
          policyVersion: 'step-0',
          purpose: 'rollout',
          rollouts: 0,
          spec: {},
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: `group-by-name-${Date.now()}`,
    });
    expect(judged).toBe(0);
  });

  it('offers the UI only user controls under plain names, each with a description', async () => {
    const personas = path.join(dir, 'personas.jsonl');
    await writeFile(personas, `${JSON.stringify({ id: 'p0', persona: 'An operations specialist.' })}\n`);
    // Each spec, and the stage from which the run has registered all its handlers.
    const runs: Record<string, { spec: unknown; stage: string }> = {
      Smoke: {
        stage: 'starting',
        spec: { kind: 'Smoke', name: 'ui', prompt: 'hello', steps: 1, model: NO_MODEL },
      },
      Synthesis: {
        stage: 'synthesizing',
        spec: {
          kind: 'Synthesis',
          name: 'ui',
          personas: { path: personas },
          tasks: 1,
          models: {
            teacher: NO_MODEL,
            toolSimulator: NO_MODEL,
            userSimulator: NO_MODEL,
            rubricExtractor: NO_MODEL,
          },
        },
      },
    };
    const seen: Record<string, string[]> = {};
    for (const [kind, { spec, stage }] of Object.entries(runs)) {
      // Paused from the first workflow task: each run registers its handlers and waits.
      const handle: WorkflowHandle = await tw.client.workflow.signalWithStart(kind, {
        args: [spec],
        taskQueue: tw.taskQueue,
        workflowId: `ui-handlers-${kind}-${Date.now()}`,
        signal: pauseSignal,
        signalArgs: [],
      });
      try {
        await eventually(async () => {
          const status = await handle.query(statusQuery);
          return status.state === 'paused' && status.stage === stage;
        });
        const { definition } = await handle.query<HandlerMetadata>('__temporal_workflow_metadata');
        const own = [...definition.signalDefinitions, ...definition.queryDefinitions].filter(
          (d) => !d.name.startsWith('__'), // the SDK's built-in queries
        );
        for (const handler of own) expect(handler.description, `${kind} ${handler.name}`).toMatch(/\w{3}/);
        for (const { name } of definition.signalDefinitions) {
          if (!USER_SIGNALS.includes(name)) expect(name, kind).toMatch(new RegExp(`^${INTERNAL_PREFIX}`));
        }
        seen[kind] = own.map((d) => d.name).sort();
      } finally {
        await handle.terminate('test over');
      }
    }
    expect(seen).toEqual({
      Smoke: ['budget', 'pause', 'resume', 'status'],
      Synthesis: ['budget', 'pause', 'resume', 'status', 'taskStage'],
    });
  });
});
