/**
 * Rubric construction (seed §3.3, issue 18): the coverage of each demonstration is measured by a
 * judge against the workflow, one verdict per step, not reported by the model that writes the
 * rubric; the rubric is written from the demonstrations that pass the coverage filter only, and a
 * task whose demonstrations all fail it gets no rubric call.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import {
  COVERAGE_JUDGE_CONTROL_ROLE,
  coverageControlTally,
  coverageJudgeStanding,
} from '../../../activities/synthesis/coverage-controls.js';
import { createStageActivities } from '../../../activities/synthesis/stages.js';
import { ModelEndpointSchema, type ModelRole } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../../testkit/model-server.js';
import { query } from '../../../testkit/database.js';

const WORKFLOW = ['Ask which order', 'Look the order up', 'Check the refund policy', 'Issue the refund'];

/** Demonstration A does steps 0-2 (3 of 4: 0.75); B only step 0 (0.25). */
const DEMOS = {
  A: [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'My order is broken.' },
    { role: 'assistant', content: 'Which order? [demo-A] I looked it up and checked the policy.' },
  ],
  B: [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'My order is broken.' },
    { role: 'assistant', content: 'Which order? [demo-B]' },
  ],
};

const textOf = (request: { body: ScriptedRequest['body'] }) =>
  request.body.messages.map((m) => String(m.content ?? '')).join('\n');

/** The coverage judge: per step of the workflow, executed or not, as the transcript shows. */
function coverageJudge(request: ScriptedRequest): string {
  const text = textOf(request);
  const executed = text.includes('[demo-A]') ? [0, 1, 2] : text.includes('[demo-B]') ? [0] : [];
  return JSON.stringify({
    steps: WORKFLOW.map((_, index) => ({
      index,
      executed: executed.includes(index),
      evidence: executed.includes(index) ? 'Which order?' : '',
    })),
  });
}

/** The rubric extractor, which would claim every demonstration did every step if it were asked. */
function rubricExtractor(request: ScriptedRequest): string {
  const demos = (textOf(request).match(/### Execution \d+/g) ?? []).length;
  return JSON.stringify({
    subGoals: ['The order is looked up', 'The refund is issued'],
    requiredInteractions: ['Ask which order'],
    executedSteps: Array.from({ length: demos }, () => [0, 1, 2, 3]),
  });
}

const honestScript = [
  { role: 'coverage-judge', reply: coverageJudge },
  { role: COVERAGE_JUDGE_CONTROL_ROLE, reply: coverageJudge },
  { role: 'rubric-extractor', reply: rubricExtractor },
];

describe('demonstration coverage', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  let role: ModelRole;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_synthesis_coverage'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5 } });
    role = {
      endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: 'coverage', maxRetries: 1 }),
      sampling: { temperature: 0, topP: 1, maxTokens: 1024 },
    };
    server.setScript(honestScript);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => server.resetStats());

  async function insertTask(taskId: string, demos: Array<keyof typeof DEMOS>): Promise<string[]> {
    await query(
      db.url,
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, forbidden, instruction, hidden_context)
       VALUES ($1, 'syn-coverage', $2, 'p', 'demonstrations', $3::jsonb, '["Refund twice"]'::jsonb, $4, 'Order 7.')`,
      // The instruction names the task, so no judge call of one task is the cached call of another.
      [taskId, Number(taskId.slice(-1)), JSON.stringify(WORKFLOW), `Fix my order (${taskId}).`],
    );
    const ids = [];
    for (const [k, demo] of demos.entries()) {
      const episodeId = `${taskId}/demo-${k}`;
      await query(
        db.url,
        `INSERT INTO episodes (episode_id, task_id, purpose, sample_index, policy_version, messages, turns, end_reason)
         VALUES ($1, $2, 'demonstration', $3, 'teacher', $4::jsonb, 1, 'final_answer')`,
        [episodeId, taskId, k, JSON.stringify(DEMOS[demo])],
      );
      ids.push(episodeId);
    }
    return ids;
  }

  const extract = (taskId: string, episodeIds: string[]) =>
    createStageActivities(() => getPool(db.url), models).extractRubric({
      runId: 'syn-coverage',
      taskId,
      idx: 0,
      seed: 0,
      templates: { version: 'v1', overrides: {} },
      rubricExtractor: role,
      coverageJudge: role,
      coverageThreshold: 0.5,
      episodeIds,
    });

  it('keeps the demonstrations whose judged coverage passes, and writes the rubric from those alone', async () => {
    const [a, b] = await insertTask('syn-coverage/task-1', ['A', 'B']);
    const outcome = await extract('syn-coverage/task-1', [a!, b!]);
    expect(outcome).toMatchObject({ ok: true, facts: { keptDemonstrations: 1 } });
    // One judge call per demonstration, against the workflow.
    const judged = server.requests.filter((r) => r.role === 'coverage-judge');
    expect(judged).toHaveLength(2);
    for (const step of WORKFLOW) expect(textOf(judged[0]!)).toContain(step);
    // The extractor saw demonstration A only.
    const extractor = server.requests.filter((r) => r.role === 'rubric-extractor');
    expect(extractor).toHaveLength(1);
    expect(textOf(extractor[0]!)).toContain('[demo-A]');
    expect(textOf(extractor[0]!)).not.toContain('[demo-B]');
    const [task] = await query<{ coverage: unknown; rubric: unknown }>(
      db.url,
      'SELECT coverage, rubric FROM tasks WHERE task_id = $1',
      ['syn-coverage/task-1'],
    );
    // The judge's verdicts, not the extractor's claim of 4 of 4 steps.
    expect(task!.coverage).toEqual([
      { episodeId: a, executedSteps: [0, 1, 2], fraction: 0.75, kept: true },
      { episodeId: b, executedSteps: [0], fraction: 0.25, kept: false },
    ]);
    expect(task!.rubric).toMatchObject({ subGoals: ['The order is looked up', 'The refund is issued'] });
  });

  it('rejects a task whose demonstrations all fail the filter without asking for a rubric', async () => {
    const [b] = await insertTask('syn-coverage/task-2', ['B']);
    const outcome = await extract('syn-coverage/task-2', [b!]);
    expect(outcome).toMatchObject({ ok: false, reason: 'low_coverage' });
    expect(server.requests.filter((r) => r.role === 'coverage-judge')).toHaveLength(1);
    expect(server.requests.filter((r) => r.role === 'rubric-extractor')).toHaveLength(0);
    const [task] = await query<{ coverage: unknown; rubric: unknown }>(
      db.url,
      'SELECT coverage, rubric FROM tasks WHERE task_id = $1',
      ['syn-coverage/task-2'],
    );
    expect(task!.coverage).toEqual([{ episodeId: b, executedSteps: [0], fraction: 0.25, kept: false }]);
    expect(task!.rubric).toBeNull();
  });

  it('grades an empty control per task, once, and finds out a judge that calls every step done', async () => {
    // The honest judge of the tests above passed each task's control, graded once per task.
    expect(await coverageControlTally(getPool(db.url), 'syn-coverage')).toEqual({
      controls: 2,
      passed: 2,
      passRate: 1,
    });
    const [a] = await insertTask('syn-coverage/task-3', ['A']);
    await extract('syn-coverage/task-3', [a!]);
    await extract('syn-coverage/task-3', [a!]); // a retried activity: no second control
    expect(server.requests.filter((r) => r.role === COVERAGE_JUDGE_CONTROL_ROLE)).toHaveLength(1);

    // A lenient judge keeps every demonstration; its controls say why that cannot be believed.
    const everyStep = JSON.stringify({
      steps: WORKFLOW.map((_, index) => ({ index, executed: true, evidence: 'Which order?' })),
    });
    server.setScript([
      { role: 'coverage-judge', reply: everyStep },
      { role: COVERAGE_JUDGE_CONTROL_ROLE, reply: everyStep },
      { role: 'rubric-extractor', reply: rubricExtractor },
    ]);
    try {
      const [b] = await insertTask('syn-coverage/task-4', ['B']);
      const [b2] = await insertTask('syn-coverage/task-5', ['B']);
      await extract('syn-coverage/task-4', [b!]);
      await extract('syn-coverage/task-5', [b2!]);
    } finally {
      server.setScript(honestScript);
    }
    const [control] = await query<{ passed: boolean; executed_steps: number[] }>(
      db.url,
      "SELECT passed, executed_steps FROM coverage_judge_controls WHERE task_id = 'syn-coverage/task-4'",
    );
    expect(control).toEqual({ passed: false, executed_steps: [0, 1, 2, 3] });
    await query(db.url, "INSERT INTO runs (run_id, kind, spec) VALUES ('syn-coverage', 'Synthesis', '{}')");
    expect(await coverageJudgeStanding(getPool(db.url), 'syn-coverage')).toEqual({
      controlPassRate: 0.6,
      minPassRate: 0.9,
      unreliable: true,
      reason:
        'judge unreliable: it graded 3 of 5 empty control demonstrations right (60%, below 90%), so its ' +
        'kept demonstrations and rubrics cannot be believed; give the run a stronger judge ' +
        '(models.coverageJudge.endpoint)',
    });
  });
});
