/**
 * One loop, one transcript bound (issue 31): a policy that would write a 2 MiB transcript is cut at
 * the same turn, with the same end reason and detail, in the mock world, a reasoning rollout and an
 * evaluation's synthetic trial, because all three play their episodes through
 * activities/world/episode-loop.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSyntheticBenchmarkTrial } from '../../../activities/evaluation/synthetic-trial.js';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { playReasoningEpisode } from '../../../activities/training/reasoning-rollout.js';
import { createEpisodeRunner, runEpisode } from '../../../activities/world/index.js';
import { BOUNDS, utf8Bytes } from '../../../schemas/bounds.js';
import { EpisodeInputSchema } from '../../../schemas/episode-input.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { verdicts } from '../reward/fixtures.js';
import { episodeInput, episodeRow, insertTask, numberingSimulator, query } from './fixtures.js';

/** Each policy turn: 60,000 characters of text and a call, so 35 turns would make 2 MiB. */
const TURN_TEXT = 'x'.repeat(60_000);
const MAX_TURNS = 35;

describe('the transcript bound, enforced once for every episode', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_transcript_bound'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 10 } });
    server.setScript([
      { role: 'policy', reply: { content: TURN_TEXT, toolCalls: [{ name: 'no_such_tool', arguments: {} }] } },
      { role: 'tool-simulator', reply: numberingSimulator() },
      { role: 'judge', reply: verdicts([false], [false], [false]) },
    ]);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });

  /** The stored episode: its turns, end, detail and transcript size. */
  async function stored(episodeId: string) {
    const row = await episodeRow(db.url, episodeId);
    const [detailRow] = await query<{ end_detail: string }>(
      db.url,
      'SELECT end_detail FROM episodes WHERE episode_id = $1',
      [episodeId],
    );
    return {
      turns: row!.turns,
      endReason: row!.end_reason,
      detail: detailRow!.end_detail.replace(/\d+ bytes/, 'N bytes'),
      bytes: utf8Bytes(JSON.stringify(row!.messages)),
      assistantTurns: row!.messages.filter((m) => m.role === 'assistant').length,
    };
  }

  it('cuts the mock world, the reasoning rollout and the synthetic trial at the same turn', async () => {
    await insertTask(db.url, 'bound-world');
    await query(db.url, `UPDATE tasks SET stage = 'kept' WHERE task_id = 'bound-world'`);
    const world = episodeInput(server.url, 'bound-model', 'bound-world', { maxTurns: MAX_TURNS });

    await runEpisode({ pool: getPool(db.url), models }, world);

    await playReasoningEpisode(
      {
        pool: getPool(db.url),
        models,
        sandbox: () => {
          throw new Error('no tool call of this test reaches the sandbox');
        },
      },
      { problemId: 'bound-world', kind: 'math', scenario: 'What is 6 * 7?', answer: '42' },
      EpisodeInputSchema.parse({ ...world, episodeId: 'bound-world/reasoning' }),
      { sandbox: {} },
    );

    const trial = await runSyntheticBenchmarkTrial(
      { pool: getPool(db.url), models, world: createEpisodeRunner({ databaseUrl: db.url, models }) },
      {
        evaluationId: 'eval-bound',
        group: 'held-out',
        taskId: 'bound-world',
        trial: 0,
        trials: 1,
        policy: { baseUrl: server.url, model: 'bound-model' },
        sampling: { temperature: 0 },
        maxTurns: MAX_TURNS,
        toolSimulator: world.toolSimulator,
        userSimulator: world.userSimulator,
        judge: world.toolSimulator,
        templates: { version: 'v1', overrides: {} },
      },
    );
    expect(trial.termination).toBe('transcript_limit');

    const episodes = await Promise.all(
      ['bound-world/rollout-0', 'bound-world/reasoning', 'eval-bound/synthetic/held-out/bound-world/t0'].map(
        stored,
      ),
    );
    const turnBytes = utf8Bytes(JSON.stringify(TURN_TEXT));
    for (const episode of episodes) {
      expect(episode.endReason).toBe('transcript_limit');
      // Kept whole up to the last turn that fits; the next turn would have crossed the bound.
      expect(episode.bytes).toBeLessThanOrEqual(BOUNDS.transcriptBytes);
      expect(episode.bytes + turnBytes).toBeGreaterThan(BOUNDS.transcriptBytes);
      expect(episode.assistantTurns).toBe(episode.turns);
      expect(episode.detail).toBe(
        `turn ${episode.turns + 1} would have made the transcript N bytes, over the ${BOUNDS.transcriptBytes}-byte bound`,
      );
    }
    expect(new Set(episodes.map((e) => e.turns)).size).toBe(1);
    expect(episodes[0]!.turns).toBeLessThan(MAX_TURNS);
  });
});
