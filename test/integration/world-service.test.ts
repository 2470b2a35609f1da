import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rubricReward } from '../../activities/reward/index.js';
import type { WorldServer } from '../../services/world/server.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { sampleValue, scrape } from '../../testkit/prometheus.js';
import { startScriptedWorld } from '../../testkit/world-fixture.js';

const RUN = 'world-fixture';
const TASK = fixtureTaskId(RUN, 0);
const AUTH = 'world-secret-0123456789';

/** The judge's verdicts: all achieved and satisfied, unless the transcript asks for a judge failure. */
const VERDICTS = {
  forbidden: [{ index: 0, violated: false, evidence: '' }],
  subGoals: [
    { index: 0, achieved: true },
    { index: 1, achieved: false },
  ],
  requiredInteractions: [{ index: 0, satisfied: true }],
};
const text = (request: ScriptedRequest) =>
  request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

/**
 * The world service on the real PostgreSQL with the scripted model server as tool simulator, user
 * simulator and judge: sessions, tool calls answered once and identically for every trajectory,
 * the user from the hidden context only, the judge's reward (and its failure as an error), request
 * ids that make every retry free, authentication, and 4xx that say what is wrong.
 */
describe('the world service', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let world: WorldServer;
  let metricsAddress: string;
  const id = () => `req-${randomBytes(6).toString('hex')}`;
  const post = async (path: string, body: unknown, auth: string | null = AUTH) => {
    const response = await fetch(`${world.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> }; // JSON answers
  };
  const open = async () => (await post('/v1/sessions', { request_id: id(), task_id: TASK })).body;

  beforeAll(async () => {
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: RUN, count: 1 });
    models = await startModelServer({
      script: [
        {
          role: 'judge',
          reply: (request) =>
            text(request).includes('PLEASE-FAIL') ? 'not a judgement' : JSON.stringify(VERDICTS),
        },
        {
          role: 'tool-simulator',
          reply: JSON.stringify({ equivalentTo: null, response: '{"id":"R-0","state":"broken"}' }),
        },
        { role: 'user-simulator', reply: 'The record id is R-0.' },
      ],
      latencyMs: 50, // long enough for concurrent calls to overlap
    });
    metricsAddress = `127.0.0.1:${await freePort()}`;
    world = await startScriptedWorld(db.url, models, {
      ledgerRunId: 'world-test',
      authorization: AUTH,
      metricsAddress,
    });
  });
  afterAll(async () => {
    await world?.close();
    await models?.close();
    await db?.drop();
  });

  it("opens a session with the task's prompt and its own tool schemas, and again for a retried request", async () => {
    const request = { request_id: id(), task_id: TASK };
    const first = await post('/v1/sessions', request);
    expect(first.status).toBe(200);
    expect(first.body.prompt.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(first.body.prompt[1].content).toBe('Please sort out record 0.');
    const [stored] = await query<{ tools: unknown[] }>(db.url, 'SELECT tools FROM tasks WHERE task_id = $1', [
      TASK,
    ]);
    expect(first.body.tools.slice(0, -1)).toEqual(stored!.tools);
    expect(first.body.tools.at(-1).function.name).toBe('ask_user');
    expect((await post('/v1/sessions', request)).body).toEqual(first.body);
  });

  it('answers the same tool call identically for concurrent trajectories, simulating it once', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    const before = models.requestCount('tool-simulator');
    const call = (session: string) =>
      post(`/v1/sessions/${session}/tools/lookup_record`, { request_id: id(), arguments: '{"id":"R-0"}' });
    const [fromA, fromB] = await Promise.all([call(a.session_id), call(b.session_id)]);
    expect(fromA).toEqual({ status: 200, body: { content: '{"id":"R-0","state":"broken"}' } });
    expect(fromB).toEqual(fromA);
    expect(models.requestCount('tool-simulator') - before).toBe(1);
    // Another session later: from the mapping, no model call.
    const later = await call((await open()).session_id);
    expect(later).toEqual(fromA);
    expect(models.requestCount('tool-simulator') - before).toBe(1);
  });

  it('answers a wrong call with what was wrong, as the agent would see it', async () => {
    const { session_id } = await open();
    const wrong = await post(`/v1/sessions/${session_id}/tools/lookup_record`, {
      request_id: id(),
      arguments: { id: 7 },
    });
    expect(wrong.status).toBe(200);
    expect(wrong.body.problem).toBe('invalid_arguments');
    const unknown = await post(`/v1/sessions/${session_id}/tools/delete_record`, {
      request_id: id(),
      arguments: {},
    });
    expect(unknown.body.problem).toBe('unknown_tool');
  });

  it('lets the user answer from the hidden context only, remembering the session', async () => {
    const { session_id } = await open();
    const before = models.requests.length;
    const first = await post(`/v1/sessions/${session_id}/ask_user`, {
      request_id: id(),
      question: 'Which record?',
    });
    expect(first).toEqual({
      status: 200,
      body: { question: 'Which record?', answer: 'The record id is R-0.', stop: false },
    });
    await post(`/v1/sessions/${session_id}/ask_user`, { request_id: id(), question: 'Anything else?' });
    const asked = models.requests.slice(before).filter((r) => r.role === 'user-simulator');
    const seen = JSON.stringify(asked.at(-1)!.body.messages);
    expect(seen).toContain('The record id is R-0.'); // the hidden context, and the first exchange
    expect(seen).toContain('Which record?');
    expect(seen).not.toContain('lookup_record'); // never the tools
    expect(seen).not.toContain('Delete records'); // never the rubric
  });

  it("scores a finished trajectory with the judge's verdict under the seed's formula, once", async () => {
    const { session_id, prompt } = await open();
    const messages = [
      ...prompt,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'lookup_record', arguments: '{"id":"R-0"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"id":"R-0","state":"broken"}' },
      { role: 'assistant', content: 'Record R-0 is fixed.' },
    ];
    const request = { request_id: id(), messages };
    const judgesBefore = models.requestCount('judge');
    const judged = await post(`/v1/sessions/${session_id}/judge`, request);
    const expected = rubricReward({
      forbiddenViolated: [false],
      subGoalsAchieved: [true, false],
      interactionsSatisfied: [true],
    });
    expect(judged).toEqual({
      status: 200,
      body: {
        reward: expected.reward,
        sub_goal_fraction: 0.5,
        interaction_fraction: 1,
        forbidden_violated: false,
      },
    });
    expect(judged.body.reward).toBe(0.75);
    // A retry pays nothing; the same request id with another transcript is refused.
    expect(await post(`/v1/sessions/${session_id}/judge`, request)).toEqual(judged);
    expect(models.requestCount('judge') - judgesBefore).toBe(1);
    const reused = await post(`/v1/sessions/${session_id}/judge`, {
      ...request,
      messages: messages.slice(0, 3),
    });
    expect(reused.status).toBe(409);
  });

  it('answers a failing judge with an error, never a score', async () => {
    const { session_id, prompt } = await open();
    const failed = await post(`/v1/sessions/${session_id}/judge`, {
      request_id: id(),
      messages: [...prompt, { role: 'assistant', content: 'PLEASE-FAIL' }],
    });
    expect(failed.status).toBe(502);
    expect(failed.body).not.toHaveProperty('reward');
    expect(failed.body.error).toMatch(/could not answer/);
    const stored = await query(db.url, 'SELECT 1 FROM judgements WHERE episode_id = $1', [session_id]);
    expect(stored).toHaveLength(0);
  });

  it('says what is wrong with a bad request, and refuses a closed session and a missing key', async () => {
    const bad = await post('/v1/sessions', { request_id: 'has space', task: TASK });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/request_id/);
    expect(bad.body.error).toMatch(/task_id/);
    expect((await post('/v1/sessions', '{not json')).status).toBe(400);
    expect((await post('/v1/sessions', { request_id: id(), task_id: 'no-such-task' })).status).toBe(404);
    expect((await post('/v1/sessions/ws-nope/ask_user', { request_id: id(), question: 'hi' })).status).toBe(
      404,
    );
    expect((await post('/v1/sessions', { request_id: id(), task_id: TASK }, null)).status).toBe(401);

    const { session_id } = await open();
    const before = { request_id: id(), arguments: '{"id":"R-0"}' };
    const answered = await post(`/v1/sessions/${session_id}/tools/lookup_record`, before);
    expect((await post(`/v1/sessions/${session_id}/close`, { request_id: id() })).body).toEqual({
      session_id,
      closed: true,
    });
    const late = await post(`/v1/sessions/${session_id}/tools/lookup_record`, {
      request_id: id(),
      arguments: {},
    });
    expect(late.status).toBe(409);
    // A request answered before the close, retried after it: its stored answer, not a refusal.
    expect(await post(`/v1/sessions/${session_id}/tools/lookup_record`, before)).toEqual(answered);
  });

  it('serves its requests by route and outcome at its metrics address (MOCKWORLD_METRICS_ADDRESS)', async () => {
    const count = (text: string, route: string, outcome: string) =>
      sampleValue(text, 'mockworld_service_request_duration_seconds_count', {
        service: 'world',
        route,
        outcome,
      });
    const before = await scrape(metricsAddress);
    const { session_id, prompt } = await open();
    await post(`/v1/sessions/${session_id}/tools/lookup_record`, {
      request_id: id(),
      arguments: '{"id":"R-0"}',
    });
    expect((await post('/v1/sessions', { request_id: id(), task_id: TASK }, null)).status).toBe(401);
    const failed = await post(`/v1/sessions/${session_id}/judge`, {
      request_id: id(),
      messages: [...prompt, { role: 'assistant', content: 'PLEASE-FAIL' }],
    });
    expect(failed.status).toBe(502);
    const after = await scrape(metricsAddress);
    const delta = (route: string, outcome: string) =>
      count(after, route, outcome) - count(before, route, outcome);
    expect(delta('/v1/sessions', 'ok')).toBe(1);
    expect(delta('/v1/sessions', 'client_error')).toBe(1);
    expect(delta('/v1/sessions/:id/tools/:name', 'ok')).toBe(1);
    expect(delta('/v1/sessions/:id/judge', 'upstream_error')).toBe(1);
    // Session ids and tool names stay out of the labels.
    expect(after).not.toContain(session_id);
    expect(after).not.toContain('lookup_record');
  });
});
