/**
 * One malformed judge output does not fail a training run (issue 18): the model layer's repair,
 * then one redraw; a rollout still unjudged is recorded, left out of the batch and counted, and
 * the run fails only past GrpoTraining's maxUnjudgedFraction.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { UnjudgedRolloutsError } from '../../../activities/training/errors.js';
import {
  createTrainingActivities,
  summarizeRollouts,
  trainingEpisodeId,
} from '../../../activities/training/index.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type Rule } from '../../../testkit/model-server.js';
import { insertTask, roleOn } from '../world/fixtures.js';
import { verdicts } from './fixtures.js';
import { query } from '../training/fixtures.js';

const RUN = 'grpo-unjudged';
const TASK = 'unjudged-task';
const GOOD = verdicts([false], [true], [true]); // reward 1
const BAD = 'I think the assistant did well overall.'; // not JSON: rejected after its repair

describe('rollouts the judge cannot grade', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  let training: ReturnType<typeof createTrainingActivities>;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_unjudged'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
    training = createTrainingActivities(db.url, models);
    await insertTask(db.url, TASK);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => server.resetStats());

  const rollout = (sampleIndex: number) => {
    const role = roleOn(server.url, 'm-unjudged');
    return {
      runId: RUN,
      iteration: 0,
      taskId: TASK,
      sampleIndex,
      policyVersion: 'step-0',
      policy: { endpoint: role.endpoint!, sampling: { temperature: 1, topP: 1, maxTokens: 64, seed: 0 } },
      toolSimulator: role,
      userSimulator: role,
      maxTurns: 4,
      templates: { version: 'v1' as const, overrides: {} },
      judge: {
        endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: 'judge-unjudged', maxRetries: 1 }),
      },
    };
  };
  const script = (judge: Rule['reply']) =>
    server.setScript([
      // Each rollout answers differently (its seed), so each judge prompt is its own call.
      { role: 'policy', reply: (request) => `Your order ORD-7731 has shipped (${request.body.seed}).` },
      { role: 'judge', reply: judge },
    ]);

  it('records a rollout whose judge stays malformed after its repair and a redraw, and does not throw', async () => {
    script(BAD);
    const result = await training.runJudgedRollout(rollout(0));
    expect(result).toMatchObject({
      episodeId: trainingEpisodeId(RUN, 0, TASK, 0, 'rollout'),
      unjudged: 'not_json',
    });
    // Draw 0 and its repair, draw 1 and its repair.
    expect(server.requestCount('judge')).toBe(4);
    const rows = await query<{ reason: string; attempts: number; run_id: string }>(
      db.url,
      'SELECT reason, attempts, run_id FROM unjudged_rollouts WHERE episode_id = $1',
      [result.episodeId],
    );
    expect(rows).toEqual([{ reason: 'not_json', attempts: 2, run_id: RUN }]);
    // A retried activity finds the record and asks the judge nothing.
    server.resetStats();
    expect(await training.runJudgedRollout(rollout(0))).toMatchObject({ unjudged: 'not_json' });
    expect(server.requestCount('judge')).toBe(0);
  });

  it('takes the redraw when it is well formed', async () => {
    // Judge requests of this rollout: draw 0 (bad), its repair (bad), draw 1 (good).
    script((request) => (request.roleIndex < 2 ? BAD : GOOD));
    const result = await training.runJudgedRollout(rollout(1));
    expect(result).toMatchObject({ reward: 1 });
    expect(server.requestCount('judge')).toBe(3);
  });

  it('leaves unjudged rollouts out of the batch, and fails the run past maxUnjudgedFraction', async () => {
    // Rollouts 2 and 3 judged well: with 0 (unjudged) and 1 (reward 1), 3 judged of 4 rollouts.
    script(GOOD);
    await training.runJudgedRollout(rollout(2));
    await training.runJudgedRollout(rollout(3));
    const pool = getPool(db.url);
    const batch = await training.buildIterationBatch({
      runId: RUN,
      step: 1,
      iteration: 0,
      maxUnjudgedFraction: 0.25,
    });
    expect(batch).toMatchObject({ rows: 3, leftOut: { unjudged: 1, offPolicy: 0, truncated: 0 } });
    // 1 of 4 = 0.25 > 0.2: the judge fails too often to trust what it did grade.
    const refused = training.buildIterationBatch({
      runId: RUN,
      step: 1,
      iteration: 0,
      maxUnjudgedFraction: 0.2,
    });
    await expect(refused).rejects.toBeInstanceOf(UnjudgedRolloutsError);
    await expect(refused).rejects.toThrow(
      /1 of 4 rollouts .* could not be judged .* more than maxUnjudgedFraction 0\.2/,
    );
    expect(await summarizeRollouts(pool, { runId: RUN, iteration: 0 })).toMatchObject({
      judged: 3,
      unjudged: 1,
    });
  });
});
