/**
 * A GRPO group's rollouts in one activity (runJudgedRolloutGroup, what GrpoGroup schedules): they
 * run at once; one that fails fails the attempt only after the others have settled, so a retry
 * never runs beside a rollout of the attempt before it, and the retry resumes every rollout from
 * its checkpoint, paying only for what the failed one had not done.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient } from '../../../activities/llm/index.js';
import { createTrainingActivities, episodePrefix } from '../../../activities/training/index.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { verdicts } from '../reward/fixtures.js';
import { insertTask, roleOn } from '../world/fixtures.js';

const TASK = 'group-task';
const ROLLOUTS = 3;

describe('a GRPO group’s rollouts in one activity', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let training: ReturnType<typeof createTrainingActivities>;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_rollout_group'), startModelServer()]);
    training = createTrainingActivities(
      db.url,
      createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } }),
    );
    await insertTask(db.url, TASK);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.resetStats();
    server.setScript([
      // Each rollout answers differently (its seed); the policy is slow, so the rollouts overlap.
      {
        role: 'policy',
        latencyMs: 300,
        reply: (request) => `Your order ORD-7731 has shipped (${request.body.seed}).`,
      },
      { role: 'judge', reply: verdicts([false], [true], [true]) },
    ]);
  });

  // Each test its own policy model: calls of the same identity would be answered from the cache.
  const group = (runId: string) => {
    const role = roleOn(server.url, `m-${runId}`);
    return {
      runId,
      iteration: 0,
      taskId: TASK,
      rollouts: ROLLOUTS,
      policyVersion: 'step-0',
      policy: {
        // No HTTP retries: a failed answer fails its rollout at once.
        endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model: `policy-${runId}`, maxRetries: 0 }),
        sampling: { temperature: 1, topP: 1, maxTokens: 64, seed: 0 },
      },
      toolSimulator: role,
      userSimulator: role,
      maxTurns: 4,
      templates: { version: 'v1' as const, overrides: {} },
      judge: { endpoint: role.endpoint! },
    };
  };
  const episodes = (runId: string) =>
    query<{ ended: number; judged: number }>(
      db.url,
      `SELECT count(e.end_reason)::int AS ended, count(j.episode_id)::int AS judged
         FROM episodes e LEFT JOIN judgements j USING (episode_id) WHERE starts_with(e.episode_id, $1)`,
      [episodePrefix(runId, 0, 'rollout')],
    );

  it('judges every rollout, all at once', async () => {
    const ended = await training.runJudgedRolloutGroup(group('group-ok'));
    expect(ended).toEqual({ judged: ROLLOUTS, rejected: 0, unjudged: 0 });
    expect(server.stats.maxInFlight).toBeGreaterThanOrEqual(2);
    expect(await episodes('group-ok')).toEqual([{ ended: ROLLOUTS, judged: ROLLOUTS }]);
  });

  it('fails only once every other rollout has settled, with the failure a retry cannot fix; the retry pays only the failed one', async () => {
    // The first two policy requests fail: one with a 500 (retryable), one with a 400 (not).
    server.injectFaults({ kind: 'server-error', role: 'policy' }, { kind: 'bad-request', role: 'policy' });
    await expect(training.runJudgedRolloutGroup(group('group-fail'))).rejects.toMatchObject({
      name: 'ModelRequestRejectedError',
    });
    // The third rollout had finished, judgement included, when the attempt failed.
    expect(await episodes('group-fail')).toEqual([{ ended: 1, judged: 1 }]);

    server.resetStats();
    expect(await training.runJudgedRolloutGroup(group('group-fail'))).toEqual({
      judged: ROLLOUTS,
      rejected: 0,
      unjudged: 0,
    });
    // Only the two failed rollouts asked the policy and the judge again.
    expect(server.requestCount('policy')).toBe(2);
    expect(server.requestCount('judge')).toBe(2);
  });
});
