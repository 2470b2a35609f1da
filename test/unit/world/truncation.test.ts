/**
 * Truncated rollouts (issue 18): an agent turn cut at its token limit or a response past
 * maxResponseTokens ends the episode as `length_limit`, never as a final answer; the judge is told
 * the transcript was cut; GrpoTraining's `truncation` rule decides whether it is trained on.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { judgeEpisode } from '../../../activities/reward/index.js';
import { getPool } from '../../../activities/store/db.js';
import { buildIterationBatch } from '../../../activities/training/iteration-batch.js';
import { trainingEpisodeId } from '../../../activities/training/index.js';
import { runEpisode } from '../../../activities/world/index.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type Rule } from '../../../testkit/model-server.js';
import { verdicts } from '../reward/fixtures.js';
import { insertEpisode, insertJudgement, insertTasks } from '../training/fixtures.js';
import { agentTurns, episodeInput, episodeRow, insertTask, numberingSimulator, query } from './fixtures.js';

/** The scripted server's usage: ~4 characters per token, rounded up (testkit/model-server.ts). */
const tokens = (text: string) => Math.ceil(text.length / 4);
const LOOKUP = { id: 'c1', name: 'get_order', arguments: { orderId: 'ORD-7731' } };
/** What the server counts as the completion of the lookup turn: the tool calls as JSON. */
const LOOKUP_COMPLETION = JSON.stringify([
  { id: 'c1', type: 'function', function: { name: 'get_order', arguments: '{"orderId":"ORD-7731"}' } },
]);

describe('truncated rollouts', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_world_truncation'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 10 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.setScript(undefined);
    server.resetStats();
  });

  const run = (input: Parameters<typeof runEpisode>[1]) =>
    runEpisode({ pool: getPool(db.url), models }, input);
  const script = (...rules: Rule[]) =>
    server.setScript([...rules, { role: 'tool-simulator', reply: numberingSimulator() }]);

  it('ends an episode whose turn stopped at its token limit as length_limit, not final_answer', async () => {
    await insertTask(db.url, 'cut-turn');
    script({
      role: 'policy',
      reply: agentTurns(
        { toolCalls: [LOOKUP] },
        { content: 'Your order ORD-7731 is being refun', finishReason: 'length' },
      ),
    });
    const summary = await run(episodeInput(server.url, 'm-cut', 'cut-turn'));
    expect(summary).toMatchObject({ turns: 2, endReason: 'length_limit' });
    expect((await episodeRow(db.url, 'cut-turn/rollout-0'))!.end_reason).toBe('length_limit');
  });

  it('asks each turn for no more than is left of maxResponseTokens and ends the episode when it is spent', async () => {
    await insertTask(db.url, 'cap');
    script({
      role: 'policy',
      reply: agentTurns({ toolCalls: [LOOKUP] }, { toolCalls: [{ ...LOOKUP, id: 'c2' }] }, 'Done.'),
    });
    // After turn 1 the response is its completion alone: the 104 characters of LOOKUP_COMPLETION, 26 tokens.
    const afterTurn1 = tokens(LOOKUP_COMPLETION);
    expect(afterTurn1).toBe(26);
    const summary = await run(
      episodeInput(server.url, 'm-cap', 'cap', { maxTurns: 8, maxResponseTokens: afterTurn1 + 5 }),
    );
    const policyCalls = server.requests.filter((r) => r.role === 'policy');
    // Turn 1 asks for the whole cap (31 < the role's 256); turn 2 for the 31 - 26 = 5 left; turn 2's
    // prompt adds the observation, so the response passes the cap and the episode ends there
    // instead of taking turn 3.
    expect(policyCalls.map((r) => r.body.max_tokens)).toEqual([afterTurn1 + 5, 5]);
    expect(summary).toMatchObject({ turns: 2, endReason: 'length_limit' });
    const row = await query<{ opening_tokens: number; response_tokens: number }>(
      db.url,
      'SELECT opening_tokens, response_tokens FROM episodes WHERE episode_id = $1',
      ['cap/rollout-0'],
    );
    const calls = await query<{ prompt_tokens: number; completion_tokens: number }>(
      db.url,
      `SELECT prompt_tokens, completion_tokens FROM llm_calls WHERE role = 'policy' AND model = 'm-cap'
        ORDER BY prompt_tokens`,
    );
    expect(row[0]!.opening_tokens).toBe(calls[0]!.prompt_tokens);
    expect(row[0]!.response_tokens).toBe(
      calls[1]!.prompt_tokens + calls[1]!.completion_tokens - calls[0]!.prompt_tokens,
    );
    expect(row[0]!.response_tokens).toBeGreaterThanOrEqual(afterTurn1 + 5);
  });

  it('tells the judge a cut transcript was cut, and only then', async () => {
    await insertTask(db.url, 'judge-cut');
    const judge = {
      endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: 'judge-cut', maxRetries: 1 }),
    };
    script(
      { role: 'judge', reply: verdicts([false], [true], [false]) },
      {
        role: 'policy',
        reply: agentTurns(
          { toolCalls: [LOOKUP] },
          { content: 'I will now refund the', finishReason: 'length' },
        ),
      },
    );
    await run(episodeInput(server.url, 'm-judge-cut', 'judge-cut'));
    await run(episodeInput(server.url, 'm-judge-cut', 'judge-cut', { sampleIndex: 1, maxTurns: 1 }));
    const pool = getPool(db.url);
    for (const sampleIndex of [0, 1]) {
      await judgeEpisode(
        { pool, models },
        { episodeId: `judge-cut/rollout-${sampleIndex}`, taskId: 'judge-cut', judge, runId: 'run-world' },
      );
    }
    const prompts = server.requests
      .filter((r) => r.role === 'judge')
      .map((r) => String(r.body.messages[1]!.content));
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toMatch(
      /cut off here: the assistant's response reached its token limit before it finished/,
    );
    expect(prompts[1]).toMatch(/cut off here: the assistant reached its turn limit before it finished/);

    await insertTask(db.url, 'judge-whole');
    script(
      { role: 'judge', reply: verdicts([false], [true], [false]) },
      { role: 'policy', reply: agentTurns({ toolCalls: [LOOKUP] }, 'Order ORD-7731 is on its way.') },
    );
    server.resetStats();
    await run(episodeInput(server.url, 'm-judge-whole', 'judge-whole'));
    await judgeEpisode(
      { pool, models },
      { episodeId: 'judge-whole/rollout-0', taskId: 'judge-whole', judge, runId: 'run-world' },
    );
    const whole = server.requests
      .filter((r) => r.role === 'judge')
      .map((r) => String(r.body.messages[1]!.content));
    expect(whole[0]).not.toMatch(/cut off/);
  });

  it('drops truncated rollouts from the batch, or keeps them as scored, as the rule says', async () => {
    // One group of four: rewards 1, 0.5, 0.25, 0; rollout 1 was cut at the turn cap.
    const runId = 'grpo-trunc';
    const [task] = await insertTasks(db.url, 'syn-trunc', 1);
    const rewards = [1, 0.5, 0.25, 0];
    for (const [k, reward] of rewards.entries()) {
      const episodeId = trainingEpisodeId(runId, 0, task!, k, 'rollout');
      await insertEpisode(db.url, episodeId, task!, { endReason: k === 1 ? 'max_turns' : 'final_answer' });
      await insertJudgement(db.url, episodeId, task!, {
        reward,
        forbidden: false,
        subGoals: reward,
        interactions: null,
      });
    }
    const pool = getPool(db.url);
    const dropped = await buildIterationBatch(pool, { runId, step: 1, iteration: 0, truncation: 'drop' });
    // Drop: rewards 1, 0.25, 0 -> mean 1.25 / 3 = 0.416667
    expect(dropped).toMatchObject({ rows: 3, leftOut: { truncated: 1 } });
    expect(dropped.rewardMean).toBeCloseTo(1.25 / 3, 12);
    const kept = await buildIterationBatch(pool, { runId, step: 2, iteration: 0, truncation: 'score' });
    // Score: all four, mean 1.75 / 4 = 0.4375
    expect(kept).toMatchObject({ rows: 4, leftOut: { truncated: 0 } });
    expect(kept.rewardMean).toBeCloseTo(0.4375, 12);
    const rows = await query<{ n: number }>(
      db.url,
      'SELECT count(*)::int AS n FROM trainer_batches WHERE run_id = $1 AND step = 1',
      [runId],
    );
    expect(rows[0]!.n).toBe(3);
  });
});
