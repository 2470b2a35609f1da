import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getPool } from '../../activities/store/db.js';
import { buildSftDataset } from '../../activities/training/sft-dataset.js';
import { PYTHON_TOOL } from '../../activities/sandbox/index.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

/** Each seed question, its answer, and the teacher's three solutions (some right, some wrong). */
const PLANS = {
  'What is 2 + 3?': { answer: '5', responses: ['The answer is 5.', 'The answer is 6.', '\\boxed{5}'] },
  'What is 4 + 4?': { answer: '8', responses: ['The answer is 7.', 'I am not sure.', '\\boxed{9}'] },
  'What is 1 + 1?': { answer: '2', responses: ['The answer is 2', 'The answer is 3.', 'no idea'] },
} as const;
const TEMPLATES = {
  version: 'v1',
  overrides: {
    reasoningSolve: path.join(REPO_ROOT, 'bench/learning/complete-the-answer.md'),
    reasoningSolveSystem: path.join(REPO_ROOT, 'bench/learning/no-system.md'),
  },
};

describe('rejection sampling: reasoning problems kept by a correct solution, trained on by SFT', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  const prompts: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-rejection-'));
    process.env.MOCKWORLD_HOME = dir;
    await writeFile(
      path.join(dir, 'seeds.jsonl'),
      Object.entries(PLANS)
        .map(([question, plan]) => JSON.stringify({ question, answer: plan.answer, kind: 'math' }))
        .join('\n'),
    );
    db = await createTestDatabase();
    const solved = new Map<string, number>();
    models = await startModelServer({
      script: (request) => {
        const prompt = String(request.body.messages.at(-1)?.content);
        prompts.push(prompt);
        const question = Object.keys(PLANS).find((q) => prompt.includes(q)) as keyof typeof PLANS;
        const n = solved.get(question) ?? 0;
        solved.set(question, n + 1);
        return PLANS[question].responses[n % 3]!;
      },
    });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('asks each seed as written, keeps a problem with a correct solution, and SFT trains on those only', async () => {
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const runId = `rejection-${Date.now()}`;
    await tw.client.workflow.execute('Synthesis', {
      args: [
        {
          kind: 'Synthesis',
          name: 'rejection-sampling',
          personas: { path: 'personas.jsonl' },
          tasks: 0,
          reasoning: {
            seeds: { path: path.join(dir, 'seeds.jsonl') },
            problems: 3,
            rewrite: false,
            keep: 'correct',
          },
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
          templates: TEMPLATES,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });

    // No rewrite call: every teacher request is a solve of the seed question, in the chosen prompt.
    expect(prompts).toHaveLength(9);
    for (const prompt of prompts) expect(prompt).toMatch(/^What is \d \+ \d\? Complete the sentence/);
    const rows = await query(
      db.url,
      `SELECT source_question, scenario, outcome, drop_reason, solutions FROM reasoning_problems
        WHERE run_id = $1 ORDER BY idx`,
      [runId],
    );
    const byQuestion = Object.fromEntries(rows.map((row) => [row['source_question'], row]));
    expect(byQuestion['What is 2 + 3?']).toMatchObject({ outcome: 'kept', scenario: 'What is 2 + 3?' });
    expect(byQuestion['What is 1 + 1?']).toMatchObject({ outcome: 'kept' });
    expect(byQuestion['What is 4 + 4?']).toMatchObject({
      outcome: 'rejected',
      drop_reason: 'no_correct_solution',
    });
    const correct = (question: string) =>
      (byQuestion[question]!['solutions'] as Array<{ response: string; correct: boolean }>)
        .filter((s) => s.correct)
        .map((s) => s.response)
        .sort();
    expect(correct('What is 2 + 3?')).toEqual(['The answer is 5.', '\\boxed{5}']);
    expect(correct('What is 1 + 1?')).toEqual(['The answer is 2']);

    // SFT on the kept problems' correct solutions, each the chat the teacher was asked.
    const dataset = await buildSftDataset(getPool(db.url), {
      runId: `sft-${runId}`,
      synthesisRunId: runId,
      source: 'reasoning',
      heldOutTasks: 1,
      epochs: 1,
      globalBatch: 8,
      seed: 0,
    });
    expect(dataset).toMatchObject({ keptTasks: 2, heldOutTasks: 1, steps: 1 });
    const batch = await query(db.url, 'SELECT payload FROM trainer_batches WHERE run_id = $1', [
      `sft-${runId}`,
    ]);
    expect(batch).toHaveLength(dataset.examples);
    expect([1, 2]).toContain(dataset.examples); // the held-out problem's solutions are left out
    for (const { payload } of batch as Array<{
      payload: { messages: Array<{ role: string; content: string }>; tools: unknown[] };
    }>) {
      const [user, assistant] = payload.messages;
      expect(payload.messages).toHaveLength(2); // the empty system template sends no system message
      expect(user!.content).toMatch(
        /^What is [12] \+ [13]\? Complete the sentence with the number: The answer is/,
      );
      expect(['The answer is 5.', '\\boxed{5}', 'The answer is 2']).toContain(assistant!.content);
      expect(payload.tools).toEqual([PYTHON_TOOL]);
    }
  });
});
