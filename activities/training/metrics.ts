import type pg from 'pg';
import { episodePrefix, type TrainingPurpose } from './episode-ids.js';
import { POLICY_ROLE } from './rollout.js';
import { sumTallies } from '../../schemas/judge-controls.js';
import { answerControlTally } from '../correctness/answer-controls.js';
import { rubricControlTally, type RubricControlTally } from '../reward/rubric-controls.js';

/** Input of {@link recordIterationMetrics}. */
export interface RecordIterationMetricsInput {
  readonly runId: string;
  readonly iteration: number;
  /** Policy version after the iteration's step (what the next iteration samples from). */
  readonly policyVersion: string | number;
  /** Small JSON object: trainer metrics, rollout summary, evaluation results. Non-finite numbers become null. */
  readonly metrics: Record<string, unknown>;
}

/**
 * Upserts one row of `training_metrics` for (run, iteration); a retry or a later call for the same
 * iteration replaces the metrics.
 */
export async function recordIterationMetrics(
  pool: pg.Pool,
  input: RecordIterationMetricsInput,
): Promise<{ runId: string; iteration: number }> {
  await pool.query(
    `INSERT INTO training_metrics (run_id, iteration, policy_version, metrics) VALUES ($1, $2, $3, $4::jsonb)
     ON CONFLICT (run_id, iteration) DO UPDATE
       SET policy_version = EXCLUDED.policy_version, metrics = EXCLUDED.metrics, updated_at = now()`,
    [input.runId, input.iteration, String(input.policyVersion), JSON.stringify(input.metrics)],
  );
  return { runId: input.runId, iteration: input.iteration };
}

/** One stored row of `training_metrics`. */
export interface IterationMetrics {
  readonly iteration: number;
  readonly policyVersion: string;
  readonly metrics: Record<string, unknown>;
}

/** Every iteration's metrics of a run, in order (also mid-run: one row per finished iteration). */
export async function readIterationMetrics(pool: pg.Pool, runId: string): Promise<IterationMetrics[]> {
  const { rows } = await pool.query<{
    iteration: number;
    policy_version: string;
    metrics: Record<string, unknown>;
  }>('SELECT iteration, policy_version, metrics FROM training_metrics WHERE run_id = $1 ORDER BY iteration', [
    runId,
  ]);
  return rows.map((r) => ({ iteration: r.iteration, policyVersion: r.policy_version, metrics: r.metrics }));
}

/** Input of {@link summarizeRollouts}. */
export interface SummarizeRolloutsInput {
  readonly runId: string;
  readonly iteration: number;
  /** Default `rollout`; `evaluation` summarizes the held-out episodes of that iteration. */
  readonly purpose?: TrainingPurpose;
}

/** Aggregates of one iteration's episodes; a mean is null when nothing was there to average. */
export interface RolloutSummaryMetrics {
  readonly episodes: number;
  /** Episodes with an end reason. */
  readonly ended: number;
  /** Episodes with a reward: a judgement, or a reasoning problem's correctness reward (the reward statistics cover these only). */
  readonly judged: number;
  readonly rewardMean: number | null;
  /** Population standard deviation of the rewards. */
  readonly rewardStd: number | null;
  /** Mean fraction of sub-goals achieved, over judged episodes whose rubric has sub-goals. */
  readonly subGoalFraction: number | null;
  /** Mean fraction of required interactions satisfied, over judged episodes whose rubric has some. */
  readonly interactionFraction: number | null;
  /** Judged episodes with a forbidden behaviour (𝕀(τ) = 0), as a fraction. */
  readonly forbiddenViolationRate: number | null;
  readonly turnsMean: number | null;
  readonly toolCallsMean: number | null;
  readonly userQuestionsMean: number | null;
  readonly toolErrorsMean: number | null;
  readonly endReasons: {
    final_answer: number;
    max_turns: number;
    user_stop: number;
    length_limit: number;
    transcript_limit: number;
  };
  /** Episodes cut at a cap (max_turns, length_limit, transcript_limit): GrpoTraining's `truncation` rule applies. */
  readonly truncated: number;
  /** Episodes with a turn served by another policy version than scheduled (never trained on). */
  readonly offPolicy: number;
  /** Episodes the judge could not grade (malformed answers after repair and redraw): never scored. */
  readonly unjudged: number;
  /**
   * The policy's calls billed to the run at the policy versions of these episodes (from
   * `llm_calls`, each call counted once; evaluations at the same version are included).
   */
  readonly policyTokens: { calls: number; prompt: number; completion: number };
  /**
   * Per kind of task (`tool-use`, `math`, `search`), in a run that mixes reasoning problems in:
   * episodes, those with a reward (the judge's, or the correctness reward), and their mean reward.
   */
  readonly byKind?: Record<string, KindMetrics>;
  /**
   * The rubric judge's controls (reward/rubric-controls.ts) on the tasks of these episodes, and
   * on every task of the run so far with the answer judge's (correctness/answer-controls.ts,
   * once per search problem and run) (`run`); absent when no judge graded any.
   */
  readonly judgeControls?: RubricControlTally & { readonly run: RubricControlTally };
}

/** One kind's share of an iteration's episodes. */
export interface KindMetrics {
  readonly episodes: number;
  readonly rewarded: number;
  readonly rewardMean: number | null;
}

/**
 * Summarizes the episodes of one iteration from `episodes`, `judgements`, `correctness_rewards`
 * and `llm_calls`: reward
 * mean/std, sub-goal and interaction fractions, forbidden-violation rate, turn and call counts,
 * and the policy's tokens.
 */
export async function summarizeRollouts(
  pool: pg.Pool,
  input: SummarizeRolloutsInput,
): Promise<RolloutSummaryMetrics> {
  const purpose = input.purpose ?? 'rollout';
  const prefix = episodePrefix(input.runId, input.iteration, purpose);
  const totals = await episodeTotals(pool, prefix, purpose);
  const kinds = await rewardsByKind(pool, prefix, purpose);
  const tokens = await policyTokens(pool, input.runId, prefix, purpose);
  const controls = await judgeControlsOf(pool, input.runId, prefix, purpose);
  return { ...rolloutSummary(totals, kinds, tokens), ...(controls ? { judgeControls: controls } : {}) };
}

/** The judge's controls on the episodes' tasks and on the whole run; undefined when it has none. */
async function judgeControlsOf(pool: pg.Pool, runId: string, prefix: string, purpose: string) {
  // The rubric judge's controls, and the answer judge's of a reasoning mix's search problems.
  const run = sumTallies(await rubricControlTally(pool, runId), await answerControlTally(pool, runId));
  if (run.controls === 0) return undefined;
  const { rows } = await pool.query<{ task_id: string }>(
    'SELECT DISTINCT task_id FROM episodes WHERE starts_with(episode_id, $1) AND purpose = $2',
    [prefix, purpose],
  );
  const here = await rubricControlTally(
    pool,
    runId,
    rows.map((r) => r.task_id),
  );
  return { ...here, run };
}

/** One row of counts and means over the iteration's episodes, their judgements and rewards. */
async function episodeTotals(pool: pg.Pool, prefix: string, purpose: string) {
  const { rows } = await pool.query<{
    episodes: number;
    ended: number;
    judged: number;
    reward_mean: number | null;
    reward_std: number | null;
    sub_goal_fraction: number | null;
    interaction_fraction: number | null;
    forbidden_rate: number | null;
    turns_mean: number | null;
    tool_calls_mean: number | null;
    user_questions_mean: number | null;
    tool_errors_mean: number | null;
    final_answer: number;
    max_turns: number;
    user_stop: number;
    length_limit: number;
    transcript_limit: number;
    off_policy: number;
    unjudged: number;
  }>(
    `SELECT count(*)::int AS episodes,
            count(e.end_reason)::int AS ended,
            count(coalesce(j.reward, c.reward))::int AS judged,
            avg(coalesce(j.reward, c.reward))::float8 AS reward_mean,
            stddev_pop(coalesce(j.reward, c.reward))::float8 AS reward_std,
            avg(j.sub_goal_fraction)::float8 AS sub_goal_fraction,
            avg(j.interaction_fraction)::float8 AS interaction_fraction,
            avg(j.forbidden_violated::int)::float8 AS forbidden_rate,
            avg(e.turns)::float8 AS turns_mean,
            avg(e.tool_calls)::float8 AS tool_calls_mean,
            avg(e.user_questions)::float8 AS user_questions_mean,
            avg(e.tool_errors)::float8 AS tool_errors_mean,
            count(*) FILTER (WHERE e.end_reason = 'final_answer')::int AS final_answer,
            count(*) FILTER (WHERE e.end_reason = 'max_turns')::int AS max_turns,
            count(*) FILTER (WHERE e.end_reason = 'user_stop')::int AS user_stop,
            count(*) FILTER (WHERE e.end_reason = 'length_limit')::int AS length_limit,
            count(*) FILTER (WHERE e.end_reason = 'transcript_limit')::int AS transcript_limit,
            count(e.off_policy)::int AS off_policy,
            count(u.episode_id)::int AS unjudged
       FROM episodes e LEFT JOIN judgements j ON j.episode_id = e.episode_id
                       LEFT JOIN correctness_rewards c ON c.reward_id = e.episode_id
                       LEFT JOIN unjudged_rollouts u ON u.episode_id = e.episode_id
      WHERE starts_with(e.episode_id, $1) AND e.purpose = $2`,
    [prefix, purpose],
  );
  return rows[0]!;
}

/** Episodes, rewarded count and reward mean per problem kind (`tool-use` for tasks). */
async function rewardsByKind(pool: pg.Pool, prefix: string, purpose: string) {
  const kinds = await pool.query<{
    kind: string;
    episodes: number;
    rewarded: number;
    reward_mean: number | null;
  }>(
    `SELECT coalesce(p.kind, 'tool-use') AS kind, count(*)::int AS episodes,
            count(coalesce(j.reward, c.reward))::int AS rewarded,
            avg(coalesce(j.reward, c.reward))::float8 AS reward_mean
       FROM episodes e LEFT JOIN reasoning_problems p ON p.problem_id = e.task_id
                       LEFT JOIN judgements j ON j.episode_id = e.episode_id
                       LEFT JOIN correctness_rewards c ON c.reward_id = e.episode_id
      WHERE starts_with(e.episode_id, $1) AND e.purpose = $2
      GROUP BY 1 ORDER BY 1`,
    [prefix, purpose],
  );
  return kinds.rows;
}

/** The policy's calls and tokens over the policy versions the iteration's episodes ran. */
async function policyTokens(pool: pg.Pool, runId: string, prefix: string, purpose: string) {
  const tokens = await pool.query<{ calls: number; prompt: number; completion: number }>(
    `SELECT count(*)::int AS calls,
            coalesce(sum(prompt_tokens), 0)::float8 AS prompt,
            coalesce(sum(completion_tokens), 0)::float8 AS completion
       FROM llm_calls
      WHERE run_id = $1 AND role = $2
        AND policy_version IN (SELECT DISTINCT policy_version FROM episodes
                                WHERE starts_with(episode_id, $3) AND purpose = $4)`,
    [runId, POLICY_ROLE, prefix, purpose],
  );
  return tokens.rows[0]!;
}

/** The metrics the iteration records, from the three queries' rows. */
function rolloutSummary(
  r: Awaited<ReturnType<typeof episodeTotals>>,
  kinds: Awaited<ReturnType<typeof rewardsByKind>>,
  tokens: Awaited<ReturnType<typeof policyTokens>>,
): RolloutSummaryMetrics {
  return {
    episodes: r.episodes,
    ended: r.ended,
    judged: r.judged,
    rewardMean: r.reward_mean,
    rewardStd: r.reward_std,
    subGoalFraction: r.sub_goal_fraction,
    interactionFraction: r.interaction_fraction,
    forbiddenViolationRate: r.forbidden_rate,
    turnsMean: r.turns_mean,
    toolCallsMean: r.tool_calls_mean,
    userQuestionsMean: r.user_questions_mean,
    toolErrorsMean: r.tool_errors_mean,
    endReasons: {
      final_answer: r.final_answer,
      max_turns: r.max_turns,
      user_stop: r.user_stop,
      length_limit: r.length_limit,
      transcript_limit: r.transcript_limit,
    },
    truncated: r.max_turns + r.length_limit + r.transcript_limit,
    offPolicy: r.off_policy,
    unjudged: r.unjudged,
    policyTokens: tokens,
    // Per kind only in a mix: a tool-use run's metrics stay as they were.
    ...(kinds.some((k) => k.kind !== 'tool-use')
      ? {
          byKind: Object.fromEntries(
            kinds.map((k) => [
              k.kind,
              { episodes: k.episodes, rewarded: k.rewarded, rewardMean: k.reward_mean },
            ]),
          ),
        }
      : {}),
  };
}
