import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPool } from '../../../activities/store/db.js';
import {
  buildTrainerBatch,
  planIteration,
  recordIterationMetrics,
  summarizeRollouts,
  TrainerBatchError,
  TrainingPlanError,
  trainingEpisodeId,
  type TrainerBatchItem,
} from '../../../activities/training/index.js';
import { ASK_USER_TOOL } from '../../../activities/world/index.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import {
  insertCall,
  insertEpisode,
  insertJudgement,
  insertTasks,
  query,
  TOOLS,
  TRANSCRIPT,
} from './fixtures.js';

const PYTHON = path.resolve('.venv-trainer/bin/python');
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('mw_training');
});
afterAll(async () => {
  await db?.drop();
});

describe('planIteration', () => {
  it('samples only kept tasks, holds out a disjoint set and covers the training set each epoch', async () => {
    const kept = await insertTasks(db.url, 'syn-plan', 10);
    await query(db.url, `UPDATE tasks SET stage = 'rejected' WHERE task_id = $1`, [kept[9]]);
    const input = { runId: 'grpo-1', synthesisRunId: 'syn-plan', heldOutTasks: 3, globalBatch: 3, seed: 11 };
    const plans = await Promise.all(
      [0, 1, 2, 3].map((iteration) => planIteration(getPool(db.url), { ...input, iteration })),
    );
    const [first] = plans;
    expect(first!.trainSize).toBe(6);
    expect(first!.iterationsPerEpoch).toBe(2);
    expect(plans.map((p) => p.epoch)).toEqual([0, 0, 1, 1]);
    expect(first!.heldOutTaskIds).toHaveLength(3);
    plans.forEach((p) => expect(p.heldOutTaskIds).toEqual(first!.heldOutTaskIds));
    const trained = plans.flatMap((p) => p.taskIds);
    expect(trained.filter((t) => first!.heldOutTaskIds.includes(t))).toEqual([]);
    expect(trained).not.toContain(kept[9]);
    const epoch0 = [...plans[0]!.taskIds, ...plans[1]!.taskIds].sort();
    const epoch1 = [...plans[2]!.taskIds, ...plans[3]!.taskIds].sort();
    expect(new Set(epoch0).size).toBe(6);
    expect(epoch1).toEqual(epoch0);
    expect(await planIteration(getPool(db.url), { ...input, iteration: 1 })).toEqual(plans[1]);
  });

  it('refuses a batch that does not fit the training set, saying what to lower', async () => {
    await insertTasks(db.url, 'syn-small', 4);
    const input = { runId: 'g', synthesisRunId: 'syn-small', seed: 0, iteration: 0 };
    await expect(
      planIteration(getPool(db.url), { ...input, heldOutTasks: 2, globalBatch: 3 }),
    ).rejects.toThrow(/globalBatch \(3\) exceeds the 2 training tasks .*lower globalBatch/);
    await expect(
      planIteration(getPool(db.url), { ...input, heldOutTasks: 5, globalBatch: 1 }),
    ).rejects.toBeInstanceOf(TrainingPlanError);
  });
});

describe('buildTrainerBatch', () => {
  const runId = 'grpo-batch';
  let items: TrainerBatchItem[];

  beforeAll(async () => {
    const [a, b] = await insertTasks(db.url, 'syn-batch', 2);
    items = [];
    for (const [taskId, rewards] of [
      [a!, [1, 0.5]],
      [b!, [0.25, 0.25]],
    ] as const) {
      for (const [k, reward] of rewards.entries()) {
        const episodeId = trainingEpisodeId(runId, 0, taskId, k, 'rollout');
        await insertEpisode(db.url, episodeId, taskId);
        items.push({ episodeId, taskId, reward });
      }
    }
  });

  it('writes one GRPO record per rollout with the transcript and tools the agent saw, and reward statistics', async () => {
    const summary = await buildTrainerBatch(getPool(db.url), { runId, step: 1, items });
    expect(summary).toMatchObject({ rows: 4, groups: 2, zeroVarianceGroups: 1 });
    expect(summary.rewardMean).toBeCloseTo(0.5, 12);
    const mean = 0.5;
    const std = Math.sqrt([1, 0.5, 0.25, 0.25].reduce((s, r) => s + (r - mean) ** 2, 0) / 4);
    expect(summary.rewardStd).toBeCloseTo(std, 12);
    expect(summary.batchRef).toEqual({ kind: 'postgres', table: 'trainer_batches', run_id: runId, step: 1 });
    const rows = await query<{ episode_id: string; payload: any }>(
      db.url,
      `SELECT episode_id, payload FROM trainer_batches WHERE run_id = $1 AND step = 1 ORDER BY episode_id`,
      [runId],
    );
    expect(rows).toHaveLength(4);
    const first = rows.find((r) => r.episode_id === items[0]!.episodeId)!.payload;
    expect(first).toEqual({
      group_id: items[0]!.taskId,
      reward: 1,
      messages: TRANSCRIPT,
      tools: [...TOOLS, ASK_USER_TOOL],
    });
  });

  it('is idempotent: a retry neither duplicates rows nor keeps rows of items no longer listed', async () => {
    await buildTrainerBatch(getPool(db.url), { runId, step: 2, items });
    await buildTrainerBatch(getPool(db.url), { runId, step: 2, items });
    const count = async () =>
      (
        await query<{ n: number }>(
          db.url,
          `SELECT count(*)::int AS n FROM trainer_batches WHERE run_id = $1 AND step = 2`,
          [runId],
        )
      )[0]!.n;
    expect(await count()).toBe(4);
    await buildTrainerBatch(getPool(db.url), { runId, step: 2, items: items.slice(0, 3) });
    expect(await count()).toBe(3);
  });

  it('names every bad item: unknown or unfinished episodes, wrong task, duplicates, unscored rewards', async () => {
    const running = trainingEpisodeId(runId, 0, items[0]!.taskId, 9, 'rollout');
    await insertEpisode(db.url, running, items[0]!.taskId, { endReason: null });
    const bad: TrainerBatchItem[] = [
      { episodeId: 'nope', taskId: 'x', reward: 0 },
      { episodeId: running, taskId: items[0]!.taskId, reward: 0 },
      { ...items[0]!, taskId: items[2]!.taskId },
    ];
    const error = await buildTrainerBatch(getPool(db.url), { runId, step: 3, items: bad }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TrainerBatchError);
    expect((error as TrainerBatchError).problems).toEqual([
      'nope: no such episode',
      `${running}: has not ended`,
      `${items[0]!.episodeId}: belongs to task ${items[0]!.taskId}, not ${items[2]!.taskId}`,
    ]);
    await expect(
      buildTrainerBatch(getPool(db.url), {
        runId,
        step: 3,
        items: [items[0]!, { ...items[0]!, reward: Number.NaN }],
      }),
    ).rejects.toThrow(/listed twice.*reward NaN is not a finite number/);
    expect(await query(db.url, `SELECT 1 FROM trainer_batches WHERE step = 3`)).toEqual([]);
  });

  it.skipIf(!existsSync(PYTHON))('is read back as a valid GRPO batch by the Python trainer', async () => {
    await buildTrainerBatch(getPool(db.url), { runId, step: 4, items });
    const script = [
      'import json',
      'from mockworld_trainer.batches import parse_batch_ref, load_batch',
      `ref = parse_batch_ref({"kind": "postgres"}, ${JSON.stringify(runId)}, 4)`,
      'records = load_batch(ref, grpo=True)',
      'print(json.dumps([{"group_id": r.group_id, "reward": r.reward, "n": len(r.messages), "tools": len(r.tools)} for r in records]))',
    ].join('\n');
    const { stdout } = await promisify(execFile)(PYTHON, ['-c', script], {
      env: { ...process.env, DATABASE_URL: db.url },
      timeout: 60_000,
    });
    const records = JSON.parse(stdout.trim().split('\n').at(-1)!) as Array<{
      group_id: string;
      reward: number;
      n: number;
      tools: number;
    }>;
    expect(records).toHaveLength(4);
    expect(records.map((r) => r.reward).sort()).toEqual([0.25, 0.25, 0.5, 1]);
    records.forEach((r) => expect(r).toMatchObject({ n: TRANSCRIPT.length, tools: 2 }));
    expect(new Set(records.map((r) => r.group_id))).toEqual(new Set(items.map((i) => i.taskId)));
  });
});

describe('summarizeRollouts and recordIterationMetrics', () => {
  it('aggregates the iteration’s rollouts, judgements and policy tokens by hand-computed values', async () => {
    const runId = 'grpo-sum';
    const [t0, t1] = await insertTasks(db.url, 'syn-sum', 2);
    const ep = (task: string, k: number, iteration = 0, purpose: 'rollout' | 'evaluation' = 'rollout') =>
      trainingEpisodeId(runId, iteration, task, k, purpose);
    await insertEpisode(db.url, ep(t0!, 0), t0!, { turns: 2 });
    await insertEpisode(db.url, ep(t0!, 1), t0!, { turns: 4, endReason: 'max_turns' });
    await insertEpisode(db.url, ep(t1!, 0), t1!, { turns: 3, endReason: 'user_stop' });
    await insertEpisode(db.url, ep(t1!, 1), t1!, { turns: 5, endReason: null }); // still running, unjudged
    await insertJudgement(db.url, ep(t0!, 0), t0!, {
      reward: 1,
      forbidden: false,
      subGoals: 1,
      interactions: 1,
    });
    await insertJudgement(db.url, ep(t0!, 1), t0!, {
      reward: 0,
      forbidden: true,
      subGoals: 0.5,
      interactions: null,
    });
    await insertJudgement(db.url, ep(t1!, 0), t1!, {
      reward: 0.5,
      forbidden: false,
      subGoals: null,
      interactions: 0,
    });
    // Other iterations and purposes must not count.
    await insertEpisode(db.url, ep(t0!, 0, 1), t0!, { turns: 9, policyVersion: 'step-1' });
    await insertEpisode(db.url, ep(t0!, 0, 0, 'evaluation'), t0!, {
      turns: 9,
      purpose: 'evaluation',
      policyVersion: 'step-9',
    });
    await insertCall(db.url, 'k1', runId, 'policy', 'step-0', 100, 10);
    await insertCall(db.url, 'k2', runId, 'policy', 'step-0', 200, 20);
    await insertCall(db.url, 'k3', runId, 'toolSimulator', 'step-0', 999, 99);
    await insertCall(db.url, 'k4', runId, 'policy', 'step-1', 999, 99);
    await insertCall(db.url, 'k5', 'other-run', 'policy', 'step-0', 999, 99);

    const summary = await summarizeRollouts(getPool(db.url), { runId, iteration: 0 });
    expect(summary).toMatchObject({
      episodes: 4,
      ended: 3,
      judged: 3,
      endReasons: { final_answer: 1, max_turns: 1, user_stop: 1 },
      policyTokens: { calls: 2, prompt: 300, completion: 30 },
    });
    expect(summary.rewardMean).toBeCloseTo(0.5, 12);
    expect(summary.rewardStd).toBeCloseTo(Math.sqrt((0.25 + 0.25 + 0) / 3), 12);
    expect(summary.subGoalFraction).toBeCloseTo(0.75, 12);
    expect(summary.interactionFraction).toBeCloseTo(0.5, 12);
    expect(summary.forbiddenViolationRate).toBeCloseTo(1 / 3, 12);
    expect(summary.turnsMean).toBeCloseTo(3.5, 12);
    expect(summary.toolCallsMean).toBe(1);

    const evaluation = await summarizeRollouts(getPool(db.url), {
      runId,
      iteration: 0,
      purpose: 'evaluation',
    });
    expect(evaluation).toMatchObject({ episodes: 1, judged: 0, rewardMean: null, turnsMean: 9 });
    const empty = await summarizeRollouts(getPool(db.url), { runId, iteration: 7 });
    expect(empty).toMatchObject({
      episodes: 0,
      rewardMean: null,
      policyTokens: { calls: 0, prompt: 0, completion: 0 },
    });

    await recordIterationMetrics(getPool(db.url), {
      runId,
      iteration: 0,
      policyVersion: 'step-1',
      metrics: { a: 1 },
    });
    await recordIterationMetrics(getPool(db.url), {
      runId,
      iteration: 0,
      policyVersion: 'step-1',
      metrics: { ...summary, loss: Number.NaN },
    });
    const rows = await query<{ policy_version: string; metrics: any }>(
      db.url,
      `SELECT policy_version, metrics FROM training_metrics WHERE run_id = $1`,
      [runId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.policy_version).toBe('step-1');
    expect(rows[0]!.metrics).toMatchObject({ episodes: 4, loss: null });
    expect(rows[0]!.metrics.a).toBeUndefined();
  });
});
