import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient } from '../../../activities/llm/index.js';
import { runRollout, type RolloutInput } from '../../../activities/training/index.js';
import { createEpisodeRunner } from '../../../activities/world/index.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { insertTasks, query } from './fixtures.js';

describe('runRollout', () => {
  let db: TestDatabase;
  let server: ModelServer;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_training_rollout'), startModelServer()]);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });

  /** A world on the test database, and a rollout of `taskId` with every role on the test server. */
  function rolloutOf(model: string, taskId: string, overrides: Partial<RolloutInput> = {}) {
    const models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 10 } });
    const world = createEpisodeRunner({ databaseUrl: db.url, models });
    const endpoint = ModelEndpointSchema.parse({
      baseUrl: server.url,
      model,
      timeoutMs: 5_000,
      maxRetries: 1,
    });
    const sampling = { temperature: 1, topP: 1, maxTokens: 64 };
    const input: RolloutInput = {
      runId: 'grpo-roll',
      iteration: 2,
      taskId,
      sampleIndex: 1,
      policyVersion: 3,
      policy: { endpoint, sampling },
      toolSimulator: { endpoint, sampling },
      userSimulator: { endpoint, sampling },
      maxTurns: 4,
      templates: { version: 'v1', overrides: {} },
      ...overrides,
    };
    return { world, input };
  }

  it('plays the policy under a deterministic episode id per purpose, billed to the run as role policy', async () => {
    const [taskId] = await insertTasks(db.url, 'syn-roll', 1);
    server.setScript([{ role: 'policy', reply: 'Your order has shipped.' }]);
    const { world, input } = rolloutOf('policy-m', taskId!);
    const rollout = await runRollout(world, input);
    expect(rollout).toMatchObject({
      episodeId: `grpo-roll/it2/${taskId}/r1`,
      taskId,
      turns: 1,
      endReason: 'final_answer',
    });
    const evaluation = await runRollout(world, { ...input, purpose: 'evaluation' });
    expect(evaluation.episodeId).toBe(`grpo-roll/eval2/${taskId}/r1`);
    const episodes = await query<{ episode_id: string; purpose: string; policy_version: string }>(
      db.url,
      `SELECT episode_id, purpose, policy_version FROM episodes ORDER BY episode_id`,
    );
    expect(episodes.map((e) => [e.purpose, e.policy_version])).toEqual([
      ['evaluation', '3'],
      ['rollout', '3'],
    ]);
    const calls = await query<{ role: string; run_id: string }>(
      db.url,
      `SELECT DISTINCT role, run_id FROM llm_calls`,
    );
    expect(calls).toEqual([{ role: 'policy', run_id: 'grpo-roll' }]);
    // A re-run (retry) returns the finished episode without calling the model again.
    const before = (await query(db.url, 'SELECT 1 FROM llm_calls')).length;
    expect(await runRollout(world, input)).toEqual(rollout);
    expect((await query(db.url, 'SELECT 1 FROM llm_calls')).length).toBe(before);
  });

  it("sends the spec's rollout tool choice on the first turn", async () => {
    const [taskId] = await insertTasks(db.url, 'syn-choice', 1);
    server.setScript([{ role: 'policy', reply: 'Done.' }]);
    server.resetStats();
    const { world, input } = rolloutOf('policy-c', taskId!, {
      runId: 'grpo-choice',
      turnToolChoice: ['task_tool'],
    });
    await runRollout(world, input);
    expect(server.requests[0]!.body.tool_choice).toBe('required');
  });
});
