import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { WorldServer } from '../../services/world/server.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startScriptedWorld } from '../../testkit/world-fixture.js';

const RUN = 'openenv-protocol';
const AUTH = 'openenv-world-secret-0123456789';

/** A client of the world's `/ws` that sends one message at a time and reads its answer. */
async function connect(world: WorldServer, headers: Record<string, string> = { authorization: AUTH }) {
  const socket = new WebSocket(`${world.url.replace(/^http/, 'ws')}/ws`, { headers });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('unexpected-response', (_, response) => reject(new Error(`refused: ${response.statusCode}`)));
    socket.once('error', reject);
  });
  const ask = (message: unknown) =>
    new Promise<{ type: string; data: Record<string, any> }>((resolve) => {
      socket.once('message', (raw) => resolve(JSON.parse(raw.toString())));
      socket.send(typeof message === 'string' ? message : JSON.stringify(message));
    });
  return { ask, close: () => socket.close() };
}

/**
 * OpenEnv's protocol on the world service, message by message (the Python client's own run is in
 * openenv.test.ts): refusals at the upgrade, OpenEnv's error codes for what a client gets wrong, and
 * a judge failure that is an error, never a reward, after which the same step can be sent again.
 */
describe("the world's OpenEnv protocol", () => {
  let db: TestDatabase;
  let models: ModelServer;
  let world: WorldServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: RUN, count: 1 });
    models = await startModelServer({ script: grpoFixtureScript });
    world = await startScriptedWorld(db.url, models, {
      ledgerRunId: 'openenv-protocol',
      authorization: AUTH,
      maxTurns: 3,
      endpoint: { maxRetries: 0 }, // an injected judge failure fails the step at once
    });
  });
  afterAll(async () => {
    await world?.close();
    await models?.close();
    await db?.drop();
  });

  it('refuses an upgrade without the Authorization header, or from a browser', async () => {
    await expect(connect(world, {})).rejects.toThrow('refused: 401');
    await expect(connect(world, { authorization: AUTH, origin: 'https://evil.example' })).rejects.toThrow(
      'refused: 403',
    );
  });

  it("answers what a client gets wrong with OpenEnv's error codes, and goes on", async () => {
    const client = await connect(world);
    expect((await client.ask('{not json')).data.code).toBe('INVALID_JSON');
    expect((await client.ask({ type: 'jump' })).data.code).toBe('UNKNOWN_TYPE');
    expect((await client.ask({ type: 'step', data: { content: 'hi' } })).data).toMatchObject({
      code: 'SESSION_ERROR',
      message: 'no episode: send a reset with a task_id first',
    });
    const noTask = await client.ask({ type: 'reset', data: {} });
    expect(noTask).toMatchObject({ type: 'error', data: { code: 'VALIDATION_ERROR' } });
    expect(noTask.data.message).toContain('task_id');
    const unknown = await client.ask({ type: 'reset', data: { task_id: 'no-such-task' } });
    expect(unknown).toMatchObject({ type: 'error', data: { code: 'EXECUTION_ERROR' } });
    const reset = await client.ask({ type: 'reset', data: { task_id: fixtureTaskId(RUN, 0) } });
    expect(reset).toMatchObject({ type: 'observation', data: { reward: null, done: false } });
    expect((await client.ask({ type: 'state' })).data).toMatchObject({ step_count: 0 });
    client.close();
  });

  it('a judge failure is an error, never a reward; the same step sent again is judged', async () => {
    const client = await connect(world);
    await client.ask({ type: 'reset', data: { task_id: fixtureTaskId(RUN, 0), episode_id: 'judge-fails' } });
    const asked = await client.ask({
      type: 'step',
      data: { tool_calls: [{ name: 'ask_user', arguments: { question: 'Which record?' } }] },
    });
    expect(asked.data.observation.messages).toEqual([
      expect.objectContaining({ role: 'tool', content: 'The record id is R-0.' }),
    ]);
    models.injectFaults({ kind: 'server-error', role: 'judge', status: 503 });
    const failed = await client.ask({ type: 'step', data: { content: 'Record R-0 is fixed.' } });
    expect(failed).toMatchObject({ type: 'error', data: { code: 'EXECUTION_ERROR' } });
    expect((await client.ask({ type: 'state' })).data).toMatchObject({ step_count: 1, done: false });
    const judged = await client.ask({ type: 'step', data: { content: 'Record R-0 is fixed.' } });
    expect(judged.data).toMatchObject({ done: true, observation: { turn: 2 } });
    expect([0.25, 0.5]).toContain(judged.data.reward);
    expect((await client.ask({ type: 'step', data: { content: 'again' } })).data.code).toBe('SESSION_ERROR');
    client.close();
  });

  it('closes a connection whose message is over the size bound, and goes on serving', async () => {
    const socket = new WebSocket(`${world.url.replace(/^http/, 'ws')}/ws`, {
      headers: { authorization: AUTH },
    });
    await new Promise((resolve) => socket.once('open', resolve));
    const closed = new Promise<number>((resolve) => socket.once('close', resolve));
    socket.on('error', () => undefined); // the server's close of an over-size message
    socket.send('x'.repeat(17 * 1024 * 1024));
    expect(await closed).toBe(1009);
    const client = await connect(world);
    expect((await client.ask({ type: 'state' })).type).toBe('state');
    client.close();
  });

  it("ends the episode at the world's maxTurns with the judge's reward", async () => {
    const client = await connect(world);
    await client.ask({ type: 'reset', data: { task_id: fixtureTaskId(RUN, 0) } });
    const lookup = { tool_calls: [{ name: 'lookup_record', arguments: { id: 'R-0' } }] };
    const replies = [];
    for (let turn = 0; turn < 3; turn++) replies.push(await client.ask({ type: 'step', data: lookup }));
    expect(replies.map((r) => r.data.done)).toEqual([false, false, true]);
    expect(typeof replies[2]!.data.reward).toBe('number');
    client.close();
  });
});
