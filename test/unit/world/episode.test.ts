import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import {
  EpisodeMismatchError,
  runEpisode,
  STOP_MARKER,
  TaskNotFoundError,
  type EpisodeHooks,
  type EpisodeProgress,
} from '../../../activities/world/index.js';
import type { EpisodeInputData } from '../../../schemas/episode-input.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type Rule } from '../../../testkit/model-server.js';
import {
  agentTurns,
  answeredCalls,
  episodeInput,
  episodeRow,
  HIDDEN_CONTEXT,
  INSTRUCTION,
  insertTask,
  numberingSimulator,
  query,
  shown,
} from './fixtures.js';

describe('an episode in the mock world', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_world_episode'), startModelServer()]);
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

  const run = (input: EpisodeInputData, hooks: EpisodeHooks = {}) =>
    runEpisode({ pool: getPool(db.url), models }, input, hooks);
  const script = (...rules: Rule[]) =>
    server.setScript([
      ...rules,
      { role: 'tool-simulator', reply: numberingSimulator() },
      { role: 'user-simulator', reply: 'My order id is ORD-7731.' },
    ]);

  it('ends with final_answer when the agent replies without a tool call, after asking the user and using a tool', async () => {
    await insertTask(db.url, 'ep-final');
    script({
      role: 'policy',
      reply: agentTurns(
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'What is your order id?' } }] },
        { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731' } }] },
        'I have looked up order ORD-7731.',
      ),
    });
    const turns: EpisodeProgress[] = [];
    const summary = await run(episodeInput(server.url, 'm-final', 'ep-final'), {
      onTurn: (p) => void turns.push(p),
    });
    expect(summary).toEqual({
      episodeId: 'ep-final/rollout-0',
      turns: 3,
      toolCalls: 1,
      userQuestions: 1,
      toolErrors: 0,
      endReason: 'final_answer',
    });
    expect(turns.map((t) => [t.turns, t.endReason])).toEqual([
      [1, null],
      [2, null],
      [3, 'final_answer'],
    ]);
    const row = await episodeRow(db.url, summary.episodeId);
    expect(row).toMatchObject({
      turns: 3,
      tool_calls: 1,
      user_questions: 1,
      tool_errors: 0,
      end_reason: 'final_answer',
    });
    expect(row!.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(row!.messages[1]!.content).toBe(INSTRUCTION);
    expect(answeredCalls(row!.messages)).toEqual([
      expect.objectContaining({ name: 'ask_user', answer: 'My order id is ORD-7731.' }),
      expect.objectContaining({ name: 'get_order', answer: '{"n":0}' }),
    ]);
    // Every role went out under its own name (the header), and is in the usage ledger.
    expect(server.stats.byRole).toEqual({ policy: 3, 'tool-simulator': 1, 'user-simulator': 1 });
    const ledger = await models.usageByRole('run-world');
    expect(ledger.map((r) => r.role).sort()).toEqual(['policy', 'tool-simulator', 'user-simulator']);
    // The agent was offered the task's tools and ask_user.
    const agentTools = (server.requests[0]!.body.tools as Array<{ function: { name: string } }>).map(
      (t) => t.function.name,
    );
    expect(agentTools).toEqual(['get_order', 'search_products', 'ask_user']);
  });

  it('shows the user simulator the hidden context and the dialogue so far, never the tools or the rubric', async () => {
    await insertTask(db.url, 'ep-user');
    script({
      role: 'policy',
      reply: agentTurns(
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'What is your order id?' } }] },
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'Refund or replacement?' } }] },
        'Done.',
      ),
    });
    await run(episodeInput(server.url, 'm-user', 'ep-user'));
    const asked = server.requests.filter((r) => r.role === 'user-simulator');
    expect(asked).toHaveLength(2);
    for (const request of asked) {
      const text = shown(request.body);
      expect(request.body.tools).toBeUndefined();
      expect(text).toContain('[hidden-marker-C]');
      expect(text).toContain(HIDDEN_CONTEXT.slice(0, 30));
      for (const secret of [
        'get_order',
        'search_products',
        'Look up an order',
        'ask_user',
        'rubric-marker',
      ]) {
        expect(text).not.toContain(secret);
      }
    }
    expect(asked[1]!.body.messages.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['user', 'What is your order id?'],
      ['assistant', 'My order id is ORD-7731.'],
      ['user', 'Refund or replacement?'],
    ]);
    // And C reaches nobody else.
    for (const request of server.requests.filter((r) => r.role !== 'user-simulator')) {
      expect(shown(request.body)).not.toContain('[hidden-marker-C]');
    }
  });

  it('ends with user_stop when the simulated user answers with the stop marker, answering later calls without running them', async () => {
    await insertTask(db.url, 'ep-stop');
    server.setScript([
      {
        role: 'policy',
        reply: {
          toolCalls: [
            { name: 'ask_user', arguments: { question: 'I refunded the order. Anything else?' } },
            { name: 'get_order', arguments: { orderId: 'ORD-7731' } },
          ],
        },
      },
      { role: 'user-simulator', reply: `No, thanks! ${STOP_MARKER}` },
    ]);
    const summary = await run(episodeInput(server.url, 'm-stop', 'ep-stop'));
    expect(summary).toMatchObject({
      turns: 1,
      userQuestions: 1,
      toolCalls: 0,
      toolErrors: 0,
      endReason: 'user_stop',
    });
    const row = await episodeRow(db.url, summary.episodeId);
    const [answer, skipped] = answeredCalls(row!.messages);
    expect(answer!.answer).toBe('No, thanks!');
    expect(JSON.parse(skipped!.answer!)).toMatchObject({ error: 'not_run' });
    expect(server.requestCount('tool-simulator')).toBe(0);
  });

  it('ends with max_turns when the agent keeps calling tools', async () => {
    await insertTask(db.url, 'ep-max');
    script({
      role: 'policy',
      reply: (r) => ({
        toolCalls: [{ name: 'search_products', arguments: { query: `lamp ${r.roleIndex}` } }],
      }),
    });
    const summary = await run(episodeInput(server.url, 'm-max', 'ep-max', { maxTurns: 3 }));
    expect(summary).toMatchObject({ turns: 3, toolCalls: 3, endReason: 'max_turns' });
    expect(server.requestCount('policy')).toBe(3);
  });

  it('answers an unknown tool and bad arguments with error observations, counts them, and goes on', async () => {
    await insertTask(db.url, 'ep-errors');
    script({
      role: 'policy',
      reply: agentTurns(
        {
          toolCalls: [
            { name: 'cancel_everything', arguments: {} },
            { name: 'get_order', arguments: { orderId: 5, coupon: 'X' } },
            { name: 'get_order', arguments: '{"orderId": ' },
            { name: 'ask_user', arguments: {} },
          ],
        },
        { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731' } }] },
        'Done.',
      ),
    });
    const summary = await run(episodeInput(server.url, 'm-errors', 'ep-errors'));
    expect(summary).toMatchObject({
      turns: 3,
      toolCalls: 4,
      userQuestions: 0,
      toolErrors: 4,
      endReason: 'final_answer',
    });
    const row = await episodeRow(db.url, summary.episodeId);
    const [unknown, invalid, notJson, noQuestion, valid] = answeredCalls(row!.messages).map((c) => c.answer!);
    expect(JSON.parse(unknown!)).toMatchObject({
      error: 'unknown_tool',
      available_tools: ['get_order', 'search_products', 'ask_user'],
    });
    expect(JSON.parse(unknown!).message).toContain('does not exist');
    expect(JSON.parse(invalid!).violations).toEqual(
      expect.arrayContaining([
        '/orderId: must be string',
        '(root): must NOT have additional properties ("coupon")',
      ]),
    );
    expect(JSON.parse(notJson!).message).toContain('not valid JSON');
    expect(JSON.parse(noQuestion!).violations).toEqual(["(root): must have required property 'question'"]);
    expect(valid).toBe('{"n":0}');
    // Only the valid call reached a simulator.
    expect(server.requestCount('tool-simulator')).toBe(1);
    expect(server.requestCount('user-simulator')).toBe(0);
  });

  it('resumes an interrupted episode from its checkpoint without repeating upstream calls of finished turns', async () => {
    await insertTask(db.url, 'ep-resume');
    script({
      role: 'policy',
      reply: agentTurns(
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'What is your order id?' } }] },
        { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731' } }] },
        { toolCalls: [{ name: 'search_products', arguments: { query: 'lamp' } }] },
        { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731', includeItems: true } }] },
        'Done.',
      ),
    });
    const input = episodeInput(server.url, 'm-resume', 'ep-resume');
    const controller = new AbortController();
    const firstTurns: number[] = [];
    await expect(
      run(input, {
        signal: controller.signal,
        onTurn: (p) => {
          firstTurns.push(p.turns);
          if (p.turns === 2) controller.abort(new Error('worker lost'));
        },
      }),
    ).rejects.toThrow('worker lost');
    expect(firstTurns).toEqual([1, 2]);
    const checkpoint = await episodeRow(db.url, input.episodeId);
    expect(checkpoint).toMatchObject({ turns: 2, end_reason: null, user_questions: 1, tool_calls: 1 });
    expect(server.stats.byRole).toEqual({ policy: 2, 'tool-simulator': 1, 'user-simulator': 1 });

    const resumedTurns: number[] = [];
    const summary = await run(input, { onTurn: (p) => void resumedTurns.push(p.turns) });
    expect(resumedTurns).toEqual([3, 4, 5]);
    expect(summary).toMatchObject({ turns: 5, toolCalls: 3, userQuestions: 1, endReason: 'final_answer' });
    // One upstream call per agent turn and per distinct simulated call over both runs.
    expect(server.stats.byRole).toEqual({ policy: 5, 'tool-simulator': 3, 'user-simulator': 1 });
    const row = await episodeRow(db.url, input.episodeId);
    expect(row!.messages.slice(0, checkpoint!.messages.length)).toEqual(checkpoint!.messages);
  });

  it('redoes a turn cut off mid-way from the model cache and the mapping', async () => {
    await insertTask(db.url, 'ep-midturn');
    const controller = new AbortController();
    server.setScript([
      {
        role: 'policy',
        reply: agentTurns(
          {
            toolCalls: [
              { name: 'get_order', arguments: { orderId: 'ORD-1' } },
              { name: 'ask_user', arguments: { question: 'Which lamp?' } },
            ],
          },
          'Done.',
        ),
      },
      { role: 'tool-simulator', reply: numberingSimulator() },
      {
        role: 'user-simulator',
        // The worker dies while the user is being asked: the agent's call and the tool are paid.
        reply: () => {
          controller.abort(new Error('worker lost'));
          return 'The blue one.';
        },
        latencyMs: 50,
      },
    ]);
    const input = episodeInput(server.url, 'm-midturn', 'ep-midturn');
    await expect(run(input, { signal: controller.signal })).rejects.toThrow('worker lost');
    expect((await episodeRow(db.url, input.episodeId))!.turns).toBe(0);
    server.setScript([
      {
        role: 'policy',
        reply: agentTurns({ content: 'unexpected: the cached answer should be used' }, 'Done.'),
      },
      { role: 'user-simulator', reply: 'The blue one.' },
    ]);
    const summary = await run(input);
    expect(summary).toMatchObject({ turns: 2, toolCalls: 1, userQuestions: 1, endReason: 'final_answer' });
    // Turn 1's agent call came from the cache and the tool from the mapping; the user was asked again.
    expect(server.stats.byRole).toEqual({ policy: 2, 'tool-simulator': 1, 'user-simulator': 2 });
  });

  it('returns the stored summary of a finished episode without any model call', async () => {
    await insertTask(db.url, 'ep-done');
    script({ role: 'policy', reply: 'Nothing to do.' });
    const input = episodeInput(server.url, 'm-done', 'ep-done');
    const first = await run(input);
    server.resetStats();
    expect(await run(input)).toEqual(first);
    expect(server.stats.total).toBe(0);
  });

  it('refuses an episode id that belongs to another sample, and a task that does not exist', async () => {
    await insertTask(db.url, 'ep-mismatch');
    script({ role: 'policy', reply: 'Nothing to do.' });
    await run(episodeInput(server.url, 'm-mismatch', 'ep-mismatch'));
    await expect(
      run(
        episodeInput(server.url, 'm-mismatch', 'ep-mismatch', {
          episodeId: 'ep-mismatch/rollout-0',
          sampleIndex: 1,
        }),
      ),
    ).rejects.toBeInstanceOf(EpisodeMismatchError);
    await expect(run(episodeInput(server.url, 'm-mismatch', 'no-such-task'))).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    const [{ count }] = (await query<{ count: number }>(
      db.url,
      `SELECT count(*)::int AS count FROM episodes WHERE task_id = 'ep-mismatch'`,
    )) as [{ count: number }];
    expect(count).toBe(1);
  });
  it("sends each turn's tool choice: ask_user named, only the task's tools required, then none, then auto", async () => {
    await insertTask(db.url, 'ep-choice');
    script({
      role: 'policy',
      reply: agentTurns(
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'What is your order id?' } }] },
        { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731' } }] },
        { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731' } }] },
        'Order ORD-7731 is on its way.',
      ),
    });
    const summary = await run(
      episodeInput(server.url, 'm-choice', 'ep-choice', {
        turnToolChoice: ['ask_user', 'task_tool', 'answer'],
      }),
    );
    const agentRequests = server.requests.filter((r) => r.role === 'policy').map((r) => r.body);
    expect(agentRequests.map((b) => b.tool_choice)).toEqual([
      { type: 'function', function: { name: 'ask_user' } },
      'required',
      'none',
      undefined,
    ]);
    const offered = agentRequests.map((b) =>
      (b.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
    );
    expect(offered).toEqual([
      ['get_order', 'search_products', 'ask_user'],
      ['get_order', 'search_products'],
      ['get_order', 'search_products', 'ask_user'],
      ['get_order', 'search_products', 'ask_user'],
    ]);
    // The scripted agent ignored 'none' on turn 3; its call is still answered (the choice is a
    // request to the server, not a filter), and the episode ran on to its final answer.
    expect(summary).toMatchObject({ turns: 4, toolCalls: 2, userQuestions: 1, endReason: 'final_answer' });
  });
});
