/**
 * A rollout served by another policy version than the one it was scheduled for (issue 18): the
 * policy server names the version that answered (`x-policy-version`, mockworld_trainer/serving/
 * http.py); the episode records the mismatch and the iteration's batch leaves the rollout out
 * instead of training on it as on-policy.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { buildIterationBatch } from '../../../activities/training/iteration-batch.js';
import { summarizeRollouts, trainingEpisodeId } from '../../../activities/training/index.js';
import { runEpisode } from '../../../activities/world/index.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { agentTurns, episodeInput, insertTask, numberingSimulator } from '../world/fixtures.js';
import { insertJudgement, query } from './fixtures.js';

const RUN = 'grpo-offpolicy';
const TASK = 'offpolicy-task';

describe('rollouts served by another policy version', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_off_policy'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 10 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => server.setScript(undefined));

  it('reads the version header into the answer, also when the answer comes from the cache', async () => {
    server.setScript([{ reply: { content: 'hello', headers: { 'x-policy-version': '3' } } }]);
    const call = {
      endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: 'versioned' }),
      messages: [{ role: 'user' as const, content: 'hi' }],
      sampling: { temperature: 1, topP: 1, maxTokens: 8 },
      policyVersion: 'step-3',
    };
    const first = await models.chat(call);
    const again = await models.chat(call);
    expect([first.servedVersion, first.cached]).toEqual(['3', false]);
    expect([again.servedVersion, again.cached]).toEqual(['3', true]);
  });

  it('marks the rollout whose turn came from step 1 when it was scheduled for step-0, and the batch leaves it out', async () => {
    await insertTask(db.url, TASK);
    // Four rollouts of one group, scheduled for step-0; rollout 2's second turn is answered by
    // weights of step 1 (a replica reloaded under it), every other turn by step 0.
    server.setScript([
      { role: 'tool-simulator', reply: numberingSimulator() },
      {
        role: 'policy',
        reply: agentTurns(
          { toolCalls: [{ name: 'get_order', arguments: { orderId: 'ORD-7731' } }] },
          (request) => ({
            content: 'Done.',
            headers: { 'x-policy-version': request.body.seed === 2 ? '1' : '0' },
          }),
        ),
      },
    ]);
    for (const k of [0, 1, 2, 3]) {
      const episodeId = trainingEpisodeId(RUN, 0, TASK, k, 'rollout');
      await runEpisode(
        { pool: getPool(db.url), models },
        episodeInput(server.url, 'm-offpolicy', TASK, {
          episodeId,
          sampleIndex: k,
          policyVersion: 'step-0',
          runId: RUN,
        }),
      );
      // rewards 1, 0.75, 0.5, 0.25
      await insertJudgement(db.url, episodeId, TASK, {
        reward: 1 - k / 4,
        forbidden: false,
        subGoals: 1 - k / 4,
        interactions: null,
      });
    }
    const rows = await query<{ sample_index: number; off_policy: string | null }>(
      db.url,
      `SELECT sample_index, off_policy FROM episodes WHERE task_id = $1 ORDER BY sample_index`,
      [TASK],
    );
    expect(rows.map((r) => r.off_policy === null)).toEqual([true, true, false, true]);
    expect(rows[2]!.off_policy).toMatch(/turn 2 was served by policy version 1, scheduled for step-0/);

    const batch = await buildIterationBatch(getPool(db.url), { runId: RUN, step: 1, iteration: 0 });
    // Rewards 1, 0.75 and 0.25 remain: mean 2 / 3
    expect(batch).toMatchObject({ rows: 3, leftOut: { offPolicy: 1, truncated: 0 } });
    expect(batch.rewardMean).toBeCloseTo(2 / 3, 12);
    const stored = await query<{ episode_id: string }>(
      db.url,
      'SELECT episode_id FROM trainer_batches WHERE run_id = $1 AND step = 1 ORDER BY episode_id',
      [RUN],
    );
    expect(stored.map((r) => r.episode_id)).not.toContain(trainingEpisodeId(RUN, 0, TASK, 2, 'rollout'));
    expect(await summarizeRollouts(getPool(db.url), { runId: RUN, iteration: 0 })).toMatchObject({
      offPolicy: 1,
    });
  });
});
