/**
 * The trainer batch of one GRPO iteration, collected from PostgreSQL (issue 18): every judged
 * rollout of the iteration that may be trained on, with its reward (the judge's, or a reasoning
 * problem's correctness reward). At the seed's scale (128 tasks
 * x 16 rollouts) the items would not fit a Temporal payload, so the workflow passes the iteration,
 * never the items.
 */
import type pg from 'pg';
import { TRUNCATED_END_REASONS } from '../../schemas/episode-input.js';
import type { TruncationRule } from '../../schemas/grpo-spec.js';
import { episodePrefix } from './episode-ids.js';
import { UnjudgedRolloutsError } from './errors.js';
import { buildTrainerBatch, type TrainerBatchSummary } from './trainer-batch.js';

/** Input of {@link buildIterationBatch}. */
export interface BuildIterationBatchInput {
  readonly runId: string;
  /** The trainer step this batch feeds. */
  readonly step: number;
  readonly iteration: number;
  /**
   * What a rollout cut at a cap (turns, tokens, transcript bytes) is: left out (`drop`) or trained
   * on with the reward its judge gave it (`score`); GrpoTraining's `truncation`. Absent (histories
   * from before the setting): `score`, what those runs did.
   */
  readonly truncation?: TruncationRule;
  /**
   * Largest share of the iteration's rollouts (judged or unjudged; those the world rejected are not
   * counted) that may be unjudged before the run fails ({@link UnjudgedRolloutsError});
   * GrpoTraining's `maxUnjudgedFraction`. Absent (older histories): 0.
   */
  readonly maxUnjudgedFraction?: number;
}

/** Judged rollouts of the iteration that are not in the batch, by why (each counted once, first reason). */
export interface LeftOut {
  /** A turn was served by another policy version than scheduled: not on-policy (episodes.off_policy). */
  readonly offPolicy: number;
  /** Cut at a cap, under the `drop` rule. */
  readonly truncated: number;
  /** The judge could not grade it (unjudged_rollouts): never scored. */
  readonly unjudged: number;
}

/** The batch written, and what was left out of it. */
export interface IterationBatch extends TrainerBatchSummary {
  readonly leftOut: LeftOut;
}

interface RolloutRow {
  episode_id: string;
  task_id: string;
  reward: number;
  end_reason: string;
  off_policy: string | null;
}

/**
 * Writes the step's batch from the iteration's judged rollouts (buildTrainerBatch) and says what
 * it left out. Deterministic: the same rows give the same batch, so a retried activity rewrites
 * nothing.
 */
export async function buildIterationBatch(
  pool: pg.Pool,
  input: BuildIterationBatchInput,
): Promise<IterationBatch> {
  const { rows } = await pool.query<RolloutRow>(
    `SELECT e.episode_id, e.task_id, coalesce(j.reward, c.reward)::float8 AS reward, e.end_reason, e.off_policy
       FROM episodes e LEFT JOIN judgements j ON j.episode_id = e.episode_id
                       LEFT JOIN correctness_rewards c ON c.reward_id = e.episode_id
      WHERE starts_with(e.episode_id, $1) AND e.purpose = 'rollout'
        AND (j.episode_id IS NOT NULL OR c.reward_id IS NOT NULL)
      ORDER BY e.episode_id`,
    [episodePrefix(input.runId, input.iteration, 'rollout')],
  );
  const unjudged = await countUnjudged(pool, input);
  const maxUnjudged = input.maxUnjudgedFraction ?? 0;
  if (unjudged > 0 && unjudged > maxUnjudged * (rows.length + unjudged)) {
    throw new UnjudgedRolloutsError(
      input.runId,
      input.iteration,
      unjudged,
      rows.length + unjudged,
      maxUnjudged,
    );
  }
  const drop = (input.truncation ?? 'score') === 'drop';
  const truncated = (row: RolloutRow) => TRUNCATED_END_REASONS.includes(row.end_reason as never);
  const offPolicy = rows.filter((row) => row.off_policy !== null);
  const onPolicy = rows.filter((row) => row.off_policy === null);
  const trained = onPolicy.filter((row) => !(drop && truncated(row)));
  const summary = await buildTrainerBatch(pool, {
    runId: input.runId,
    step: input.step,
    items: trained.map((r) => ({ episodeId: r.episode_id, taskId: r.task_id, reward: r.reward })),
  });
  return {
    ...summary,
    leftOut: { offPolicy: offPolicy.length, truncated: onPolicy.length - trained.length, unjudged },
  };
}

async function countUnjudged(pool: pg.Pool, input: BuildIterationBatchInput): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM unjudged_rollouts u JOIN episodes e ON e.episode_id = u.episode_id
      WHERE starts_with(u.episode_id, $1) AND e.purpose = 'rollout'`,
    [episodePrefix(input.runId, input.iteration, 'rollout')],
  );
  return rows[0]!.n;
}
