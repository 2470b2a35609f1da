/**
 * Seed 002 details found in review (issue 18): rejection sampling "until 32 correct ones are
 * collected" (no per-question attempt cap, when asked for), embedding selection from the RS pool of
 * the first R accepted (so r = R is RS exactly, whatever the last wave added), the exact-match
 * shortcut as a switch (the seed's LLM judge grades every answer), and student answers cut at the
 * evaluation cap counted.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { evaluateCell } from '../../../activities/study/evaluate.js';
import { selectByEmbedding } from '../../../activities/study/embedding-selection.js';
import { judgeResponse } from '../../../activities/study/judge.js';
import { createStudyActivities } from '../../../activities/study/index.js';
import { sampleQuestion } from '../../../activities/study/sampling.js';
import { questionById } from '../../../activities/study/questions.js';
import { ModelEndpointSchema, type ModelRole } from '../../../schemas/model-endpoint.js';
import { ScalingStudySpecSchema } from '../../../schemas/scaling-study-spec.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../../testkit/model-server.js';

const QUESTIONS = [
  { id: 'hard', question: 'What is 6 times 7?', answer: '42', domain: 'math' },
  { id: 'easy', question: 'What is 2 plus 2?', answer: '4', domain: 'math' },
];
const RS = { name: 'rs' as const, temperature: 1.2, persona: false, questions: 'seed' as const };

describe('seed 002 details', () => {
  let dir: string;
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  let role: ModelRole;
  const studyId = 'study-details';

  /** The teacher: wrong until attempt 130 of the hard question, always right on the easy one. */
  function teacher(request: ScriptedRequest): string {
    const text = JSON.stringify(request.body.messages);
    const attempt = request.body.seed ?? 0; // seed 0 + attempt n
    if (text.includes('6 times 7')) return attempt >= 130 ? 'So the answer is 42.' : 'So the answer is 41.';
    return `Counting on my fingers (${attempt}), the answer is 4.`;
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-seed002-'));
    const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
    await writeFile(path.join(dir, 'seeds.jsonl'), jsonl(QUESTIONS));
    await writeFile(path.join(dir, 'test.jsonl'), jsonl([QUESTIONS[1]!]));
    [db, server] = await Promise.all([
      createTestDatabase('mw_study_seed002'),
      startModelServer({
        script: [
          { role: 'teacher', reply: teacher },
          { role: 'study-judge', reply: 'A' },
          {
            role: 'student',
            reply: { content: 'Let me think step by step about', finishReason: 'length' },
          },
        ],
      }),
    ]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
    role = {
      endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: 'scripted', maxRetries: 1 }),
      sampling: { temperature: 1.2, topP: 1, maxTokens: 64, seed: 0 },
    };
    await createStudyActivities(db.url, models).prepareStudy({
      studyId,
      seedPool: path.join(dir, 'seeds.jsonl'),
      testSet: path.join(dir, 'test.jsonl'),
    });
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('samples until R are correct when the spec sets no attempt cap (the seed states none)', async () => {
    const spec = ScalingStudySpecSchema.parse({
      kind: 'ScalingStudy',
      questions: { seedPool: 's', testSet: 't' },
      student: { base: { kind: 'tiny' }, endpoint: { baseUrl: server.url, model: 'm' } },
      rejectionSampling: { maxAttemptsPerQuestion: null },
    });
    expect(spec.rejectionSampling.maxAttemptsPerQuestion).toBeNull();
    // R = 1 in waves of 8: attempt 130 is the first correct one; its wave (128-135) completes,
    // and attempts 130-135 are all correct.
    const result = await sampleQuestion(models, getPool(db.url), {
      studyId,
      stream: RS,
      questionId: 'hard',
      teacher: role,
      judge: role,
      accepted: 1,
      maxAttempts: null,
      attemptsPerWave: 8,
      seed: 0,
    });
    expect(result).toEqual({ attempts: 136, accepted: 6, exhausted: false });
  });

  it('selects by embedding from the first R accepted: at r = R it is RS, whatever the last wave added', async () => {
    // R = 2 in one wave of 3: all three correct, so the pool holds 3 accepted (the overshoot).
    const sampled = await sampleQuestion(models, getPool(db.url), {
      studyId,
      stream: RS,
      questionId: 'easy',
      teacher: role,
      judge: role,
      accepted: 2,
      maxAttempts: 3,
      attemptsPerWave: 3,
      seed: 0,
    });
    expect(sampled.accepted).toBe(3);
    await selectByEmbedding(getPool(db.url), {
      studyId,
      questionId: 'easy',
      embeddings: role.endpoint!,
      accepted: 2,
    });
    const [row] = await query<{ selection: number[] }>(
      db.url,
      'SELECT selection FROM study_selections WHERE study_id = $1 AND question_id = $2',
      [studyId, 'easy'],
    );
    // RS at r = 2 is attempts [0, 1]; the selection at r = 2 is its first 2: the same set.
    expect(row!.selection).toHaveLength(2);
    expect([...row!.selection].sort()).toEqual([0, 1]);
  });

  it('asks the LLM judge about an exact match when the shortcut is off', async () => {
    const question = await questionById(getPool(db.url), studyId, 'easy');
    const judge = { ...role, sampling: { temperature: 0, topP: 1, maxTokens: 8 } };
    const before = server.requestCount('study-judge');
    const fast = await judgeResponse(models, { studyId, judge, question, response: 'The answer is 4.' });
    expect(fast).toMatchObject({ correct: true, judgedBy: 'exact' });
    expect(server.requestCount('study-judge')).toBe(before);
    const judged = await judgeResponse(models, {
      studyId,
      judge,
      question,
      response: 'The answer is 4.',
      exactMatch: false,
    });
    expect(judged).toMatchObject({ correct: true, judgedBy: 'llm' });
    expect(server.requestCount('study-judge')).toBe(before + 1);
    const spec = ScalingStudySpecSchema.parse({
      kind: 'ScalingStudy',
      questions: { seedPool: 's', testSet: 't' },
      student: { base: { kind: 'tiny' }, endpoint: { baseUrl: server.url, model: 'm' } },
    });
    expect(spec.exactMatch).toBe(true);
  });

  it('counts student answers cut at the evaluation cap, whose default leaves room for a worked answer', async () => {
    const spec = ScalingStudySpecSchema.parse({
      kind: 'ScalingStudy',
      questions: { seedPool: 's', testSet: 't' },
      student: { base: { kind: 'tiny' }, endpoint: { baseUrl: server.url, model: 'm' } },
    });
    // The seed's teacher writes up to 8192 tokens and its student trains on 4096-token sequences:
    // 1,024 cut worked answers before their last line.
    expect(spec.evaluation.sampling.maxTokens).toBe(4096);
    await query(
      db.url,
      `INSERT INTO study_cells (study_id, cell_id, protocol, pool, budget, seed)
       VALUES ($1, 'rs-q4-r1-s0', 'rs', 4, 1, 0)`,
      [studyId],
    );
    const evaluation = await evaluateCell(models, getPool(db.url), {
      studyId,
      cellId: 'rs-q4-r1-s0',
      trainerRunId: 'run-cell',
      policyStep: 1,
      student: role.endpoint!,
      sampling: { temperature: 0.7, topP: 1, maxTokens: 8, seed: 3 },
      samples: 2,
      judge: { ...role, sampling: { temperature: 0, topP: 1, maxTokens: 8 } },
    });
    expect(evaluation).toMatchObject({ judged: 2, truncated: 2 });
    const rows = await query<{ truncated: boolean }>(
      db.url,
      'SELECT truncated FROM study_evaluations WHERE study_id = $1 AND cell_id = $2',
      [studyId, 'rs-q4-r1-s0'],
    );
    expect(rows.map((r) => r.truncated)).toEqual([true, true]);
  });
});
