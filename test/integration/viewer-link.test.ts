/**
 * From the Temporal UI to the data (issue 20, point 2): a run started by the CLI's client carries
 * a static summary and details naming its viewer page, and every run, also one started from the
 * UI, shows current details with its state and that link — kept over continue-as-new.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startRun } from '../../client/runs.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { VIEWER_MEMO } from '../../workflows/run-control.js';

const VIEWER = 'http://viewer.test.internal:9000';
process.env.MOCKWORLD_VIEWER_URL = VIEWER;

interface WorkflowMetadata {
  readonly currentDetails?: string;
}

describe('the viewer link in the Temporal UI', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-viewer-link-'));
    process.env.MOCKWORLD_HOME = dir;
    db = await createTestDatabase();
    // Synthesis roles by the synthesis script; the smoke run's calls a plain answer.
    models = await startModelServer({
      script: (request) => (request.role === 'smoke' ? 'hello back' : synthesisScript(request)),
    });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const metadata = (id: string) =>
    tw.client.workflow.getHandle(id).query<WorkflowMetadata>('__temporal_workflow_metadata');

  it('a CLI-started run has a static summary and current details that link its viewer page', async () => {
    const id = `smoke-viewer-${randomBytes(3).toString('hex')}`;
    await startRun(
      tw.client,
      {
        kind: 'Smoke',
        name: 'linked',
        prompt: 'hello',
        steps: 1,
        model: { endpoint: { baseUrl: models.url, model: 'scripted' }, sampling: { maxTokens: 8 } },
      } as never,
      id,
      tw.taskQueue,
    );
    const handle = tw.client.workflow.getHandle(id);
    await handle.result();
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`mockworld Smoke "linked": ${VIEWER}/runs/${id}`);
    expect(await description.staticDetails()).toContain(`[mockworld viewer](${VIEWER}/runs/${id})`);
    expect(description.memo?.[VIEWER_MEMO]).toBe(`${VIEWER}/runs/${id}`);
    const details = (await metadata(id)).currentDetails;
    expect(details).toBe(
      `**Smoke** · completed · 1/1 · done\n\n[Open this run in the mockworld viewer](${VIEWER}/runs/${id})`,
    );
  });

  it('a run started as from the UI (no client help) links its page, also after continue-as-new', async () => {
    const id = `synthesis-viewer-${randomBytes(3).toString('hex')}`;
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(2, false));
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const handle = await tw.client.workflow.start('Synthesis', {
      args: [
        {
          name: 'viewer-link',
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: 2,
          demonstrationsPerTask: 1,
          maxTurns: 6,
          coverageThreshold: 0.5,
          tasksPerWorkflowRun: 1, // continues as new after the first task
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: id,
    });
    await handle.result();
    const description = await handle.describe();
    expect(description.runId).not.toBe(handle.firstExecutionRunId); // it did continue as new
    expect(description.memo?.[VIEWER_MEMO]).toBe(`${VIEWER}/runs/${id}`);
    expect((await metadata(id)).currentDetails).toMatch(
      new RegExp(
        `^\\*\\*Synthesis\\*\\* · completed · 2/2 · .*\\n\\n\\[Open this run in the mockworld viewer\\]\\(${VIEWER}/runs/${id}\\)$`,
      ),
    );
  });
});
