import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANSWER_JUDGE_ROLE,
  createCorrectnessActivities,
  CorrectnessInputError,
  verifyMath,
} from '../../../activities/correctness/index.js';
import {
  ANSWER_JUDGE_CONTROL_ROLE,
  answerControlTally,
  wrongAnswer,
} from '../../../activities/correctness/answer-controls.js';
import { createModelClient, StructuredOutputRejectedError } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { judgeStanding } from '../../../schemas/judge-controls.js';
import { locateSandbox } from '../../../activities/sandbox/index.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../../testkit/model-server.js';

/**
 * Correctness rewards with hand-made cases: math through math-verify in the real sandbox (the
 * sandbox venv, which `npm test` installs first), search through exact match and the scripted
 * LLM judge (the project's one test double), stored in the machine's PostgreSQL.
 */

describe('correctness rewards', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let activities: ReturnType<typeof createCorrectnessActivities>;
  let judge: {
    endpoint: ReturnType<typeof ModelEndpointSchema.parse>;
    sampling: { temperature: number; topP: number; maxTokens: number };
  };

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_correctness'), startModelServer()]);
    activities = createCorrectnessActivities(
      db.url,
      createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5 } }),
    );
    judge = {
      endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: 'mock-model', maxRetries: 1 }),
      sampling: { temperature: 0, topP: 1, maxTokens: 256 },
    };
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it('math: equivalent forms score 1, wrong or missing answers 0, each with its extracted answer', async () => {
    const responses = {
      decimal: 'Half of it: \\boxed{0.5}',
      fraction: 'So the probability is $\\boxed{\\frac{1}{2}}$.',
      slash: 'Work.\nFinal Answer: 1/2',
      percent: 'It is \\boxed{50\\%}',
      wrong: 'I get \\boxed{0.6}',
      third: 'Final answer: 1/3',
      none: 'I could not finish.',
    };
    const rewards = await activities.scoreReasoningAnswers({
      runId: 'run-math',
      kind: 'math',
      question: 'A fair coin is tossed once. What is the probability of heads?',
      gold: '\\frac{1}{2}',
      items: Object.entries(responses).map(([id, response]) => ({ rewardId: `math-${id}`, response })),
    });
    expect(rewards.map((r) => [r.rewardId, r.reward, r.extractedAnswer, r.method])).toEqual([
      ['math-decimal', 1, '0.5', 'math-verify'],
      ['math-fraction', 1, '\\frac{1}{2}', 'math-verify'],
      ['math-slash', 1, '1/2', 'math-verify'],
      ['math-percent', 1, '50\\%', 'math-verify'],
      ['math-wrong', 0, '0.6', 'math-verify'],
      ['math-third', 0, '1/3', 'math-verify'],
      ['math-none', 0, null, 'no-answer'],
    ]);
    expect(rewards[0]!.detail).toContain('math-verify read the gold answer as 1/2');
    const rows = await query<{ reward_id: string; reward: number; extracted_answer: string | null }>(
      db.url,
      "SELECT reward_id, reward, extracted_answer FROM correctness_rewards WHERE run_id = 'run-math' ORDER BY reward_id",
    );
    expect(rows).toHaveLength(7);
    expect(rows.find((r) => r.reward_id === 'math-decimal')).toEqual({
      reward_id: 'math-decimal',
      reward: 1,
      extracted_answer: '0.5',
    });
  });

  it('math: algebraic equivalence, not string equality', async () => {
    const install = locateSandbox();
    const verdicts = await verifyMath({ install }, [
      { gold: '(x+1)^2', answer: 'x^2+2x+1' },
      { gold: '\\frac{\\sqrt{2}}{2}', answer: '\\frac{1}{\\sqrt{2}}' },
      { gold: '\\{1, 2\\}', answer: '\\{2, 1\\}' },
      { gold: '3', answer: '3.0' },
      { gold: '(x+1)^2', answer: 'x^2+1' },
      { gold: '\\pi', answer: '3.14' },
      // Policy text is parsed as LaTeX only, never evaluated as Python.
      { gold: '0', answer: '__import__("os").system("echo pwned")' },
    ]);
    expect(verdicts.map((v) => v.equivalent)).toEqual([true, true, true, true, false, false, false]);
  });

  it('math: pairs a batch run did not reach (it hit a cap) are verified alone', async () => {
    const install = locateSandbox();
    // 16 pairs print about 1.3 KiB of verdicts: a 1 KiB output cap kills the batch run part-way.
    const pairs = Array.from({ length: 16 }, (_, i) => ({
      gold: String(i),
      answer: i % 2 ? `\\frac{${2 * i}}{2}` : `${i + 1}`,
    }));
    const verdicts = await verifyMath({ install }, pairs, { batch: { outputBytes: 1_024 } });
    expect(verdicts.map((v) => v.index)).toEqual(pairs.map((_, i) => i));
    expect(verdicts.map((v) => v.equivalent)).toEqual(pairs.map((_, i) => i % 2 === 1));
  });

  it('search: a normalized exact match needs no judge; otherwise the judge decides', async () => {
    server.setScript([
      {
        role: ANSWER_JUDGE_ROLE,
        reply: (request) => {
          const prompt = String(request.body.messages.at(-1)!.content);
          const equivalent = prompt.includes('Answer to grade: Canberra, the capital city');
          return JSON.stringify({ equivalent, reason: equivalent ? 'Same city.' : 'A different city.' });
        },
      },
    ]);
    const before = server.requestCount(ANSWER_JUDGE_ROLE);
    const rewards = await activities.scoreReasoningAnswers({
      runId: 'run-search',
      kind: 'search',
      question: 'What is the capital of Australia?',
      gold: 'Canberra',
      judge,
      items: [
        { rewardId: 'search-exact', response: 'I searched.\n\\boxed{canberra.}' },
        { rewardId: 'search-judged', response: 'Final answer: Canberra, the capital city' },
        { rewardId: 'search-wrong', response: 'Final answer: Sydney' },
        { rewardId: 'search-empty', response: '   ' },
      ],
    });
    expect(rewards.map((r) => [r.reward, r.extractedAnswer, r.method])).toEqual([
      [1, 'canberra', 'exact-match'],
      [1, 'Canberra, the capital city', 'judge'],
      [0, 'Sydney', 'judge'],
      [0, null, 'no-answer'],
    ]);
    expect(rewards[2]!.detail).toContain('A different city.');
    expect(server.requestCount(ANSWER_JUDGE_ROLE) - before).toBe(2);

    // Again: the stored rewards come back, and the judge is not asked again.
    const again = await activities.scoreReasoningAnswers({
      runId: 'run-search',
      kind: 'search',
      question: 'What is the capital of Australia?',
      gold: 'Canberra',
      judge,
      items: [{ rewardId: 'search-judged', response: 'Final answer: Canberra, the capital city' }],
    });
    expect(again).toEqual([rewards[1]]);
    expect(server.requestCount(ANSWER_JUDGE_ROLE) - before).toBe(2);
  });

  it("search: the judge also grades each question's reference and a wrong answer, once per run, never a score", async () => {
    const line = (prompt: string, label: string) => new RegExp(`^${label}: (.*)$`, 'm').exec(prompt)![1]!;
    const honest = (request: ScriptedRequest) => {
      const prompt = String(request.body.messages.at(-1)!.content);
      const equivalent = line(prompt, 'Answer to grade')
        .toLowerCase()
        .includes(line(prompt, 'Reference answer').toLowerCase());
      return JSON.stringify({ equivalent, reason: equivalent ? 'Names the reference.' : 'Another answer.' });
    };
    const lenient = () => JSON.stringify({ equivalent: true, reason: 'Close enough.' });
    // Each judge its own model: the ledger would otherwise answer the second from the first's calls.
    const score = (runId: string, rewardId: string, model: string) =>
      activities.scoreReasoningAnswers({
        runId,
        kind: 'search',
        question: 'Who discovered polonium?',
        gold: 'Marie Curie',
        judge: { ...judge, endpoint: { ...judge.endpoint, model } },
        items: [{ rewardId, response: 'Final answer: the physicist Marie Curie' }],
      });
    const pool = getPool(db.url);

    server.setScript([
      { role: ANSWER_JUDGE_ROLE, reply: honest },
      { role: ANSWER_JUDGE_CONTROL_ROLE, reply: honest },
    ]);
    const [reward] = await score('run-controls-honest', 'controls-honest-1', 'honest-judge');
    expect(reward).toMatchObject({ reward: 1, method: 'judge' }); // the controls are no score
    expect(
      await query(
        db.url,
        `SELECT kind, answer, expected, passed FROM answer_judge_controls WHERE run_id = 'run-controls-honest' ORDER BY kind`,
      ),
    ).toEqual([
      { kind: 'reference', answer: 'Marie Curie', expected: true, passed: true },
      { kind: 'wrong', answer: 'I do not know.', expected: false, passed: true },
    ]);
    const controlCalls = server.requestCount(ANSWER_JUDGE_CONTROL_ROLE);
    await score('run-controls-honest', 'controls-honest-2', 'honest-judge'); // once per question and run
    expect(server.requestCount(ANSWER_JUDGE_CONTROL_ROLE)).toBe(controlCalls);
    const honestTally = await answerControlTally(pool, 'run-controls-honest');
    expect(honestTally).toEqual({ controls: 2, passed: 2, passRate: 1 });
    expect(judgeStanding(honestTally, 0.9, 'search scores', 'control items')?.unreliable).toBe(false);

    // A judge that calls every answer equivalent is found out by the wrong answer.
    server.setScript([
      { role: ANSWER_JUDGE_ROLE, reply: lenient },
      { role: ANSWER_JUDGE_CONTROL_ROLE, reply: lenient },
    ]);
    await score('run-controls-lenient', 'controls-lenient-1', 'lenient-judge');
    const lenientTally = await answerControlTally(pool, 'run-controls-lenient');
    expect(lenientTally).toEqual({ controls: 2, passed: 1, passRate: 0.5 });
    expect(judgeStanding(lenientTally, 0.9, 'search scores', 'control items')?.reason).toBe(
      'judge unreliable: it graded 1 of 2 control items right (50%, below 90%), so its search scores ' +
        'cannot be believed; give the run a stronger judge (judge.endpoint)',
    );
    // A numeric reference gets another number as its wrong answer.
    expect([wrongAnswer('43'), wrongAnswer('1,000'), wrongAnswer('-2.5')]).toEqual(['86', '2000', '0']);
  });

  it('search: a judge that fails is an error, never a score, and nothing is stored', async () => {
    server.setScript([{ role: ANSWER_JUDGE_ROLE, reply: 'not json at all' }]);
    const error = await activities
      .scoreReasoningAnswers({
        runId: 'run-judge-fails',
        kind: 'search',
        question: 'Who discovered penicillin?',
        gold: 'Alexander Fleming',
        judge,
        items: [{ rewardId: 'judge-fails', response: 'Final answer: Fleming, I think' }],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputRejectedError);
    expect(await query(db.url, "SELECT 1 FROM correctness_rewards WHERE reward_id = 'judge-fails'")).toEqual(
      [],
    );
  });

  it('refuses a search problem without a judge and a reward id reused for another response', async () => {
    const base = { runId: 'run-math', kind: 'math' as const, question: 'q', gold: '\\frac{1}{2}' };
    await expect(
      activities.scoreReasoningAnswers({
        ...base,
        kind: 'search',
        items: [{ rewardId: 'x', response: 'Canberra' }],
      }),
    ).rejects.toThrow(CorrectnessInputError);
    await expect(
      activities.scoreReasoningAnswers({
        ...base,
        items: [{ rewardId: 'math-decimal', response: '\\boxed{7}' }],
      }),
    ).rejects.toThrow('already stored for another response');
  });
});
