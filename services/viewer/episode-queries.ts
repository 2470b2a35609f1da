import type pg from 'pg';

/** A rubric judge's verdict on one episode (table `judgements`). */
export interface JudgementRow {
  readonly judgeModel: string;
  /** Per item; `checker` is 'judge' or 'rule:<kind>' (absent on judgements stored before rules). */
  readonly verdicts: {
    readonly forbidden?: readonly { index: number; violated: boolean; evidence?: string; checker?: string }[];
    readonly subGoals?: readonly { index: number; achieved: boolean; evidence?: string; checker?: string }[];
    readonly requiredInteractions?: readonly {
      index: number;
      satisfied: boolean;
      evidence?: string;
      checker?: string;
    }[];
  };
  readonly forbiddenViolated: boolean;
  readonly subGoalFraction: number | null;
  readonly interactionFraction: number | null;
  readonly reward: number;
}

/** One stored episode with its judgement, if it was judged. */
export interface EpisodeRow {
  readonly episodeId: string;
  readonly taskId: string;
  readonly purpose: string;
  readonly sampleIndex: number;
  readonly policyVersion: string;
  readonly messages: readonly Record<string, unknown>[];
  readonly turns: number;
  readonly toolCalls: number;
  readonly userQuestions: number;
  readonly toolErrors: number;
  readonly endReason: string | null;
  readonly endDetail: string | null;
  readonly createdAt: Date;
  readonly judgement: JudgementRow | null;
}

// A reasoning problem's rollout has no judgement: its reward is the correctness reward.
const SELECT = `SELECT e.*, j.judge_model, j.verdicts, j.forbidden_violated, j.sub_goal_fraction,
                       j.interaction_fraction, coalesce(j.reward, c.reward::float8) AS reward
                  FROM episodes e LEFT JOIN judgements j ON j.episode_id = e.episode_id
                                  LEFT JOIN correctness_rewards c ON c.reward_id = e.episode_id`;

function fromRow(r: Record<string, unknown>): EpisodeRow {
  return {
    episodeId: String(r.episode_id),
    taskId: String(r.task_id),
    purpose: String(r.purpose),
    sampleIndex: Number(r.sample_index),
    policyVersion: String(r.policy_version),
    messages: (r.messages as Record<string, unknown>[]) ?? [],
    turns: Number(r.turns),
    toolCalls: Number(r.tool_calls),
    userQuestions: Number(r.user_questions),
    toolErrors: Number(r.tool_errors),
    endReason: (r.end_reason as string | null) ?? null,
    endDetail: (r.end_detail as string | null) ?? null,
    createdAt: r.created_at as Date,
    judgement:
      r.reward === null || r.reward === undefined
        ? null
        : {
            judgeModel: String(r.judge_model),
            verdicts: r.verdicts as JudgementRow['verdicts'],
            forbiddenViolated: Boolean(r.forbidden_violated),
            subGoalFraction: r.sub_goal_fraction as number | null,
            interactionFraction: r.interaction_fraction as number | null,
            reward: Number(r.reward),
          },
  };
}

/** The episodes of a task for one purpose (demonstrations of a synthesis task), by sample. */
export async function taskEpisodes(pool: pg.Pool, taskId: string, purpose: string): Promise<EpisodeRow[]> {
  const { rows } = await pool.query(
    `${SELECT} WHERE e.task_id = $1 AND e.purpose = $2 ORDER BY e.sample_index, e.episode_id`,
    [taskId, purpose],
  );
  return rows.map(fromRow);
}

/** Every episode whose id starts with `prefix` (one iteration's rollouts: `<run>/it3/`). */
export async function episodesByPrefix(
  pool: pg.Pool,
  prefix: string,
  purpose: string,
): Promise<EpisodeRow[]> {
  const { rows } = await pool.query(
    `${SELECT} WHERE starts_with(e.episode_id, $1) AND e.purpose = $2 ORDER BY e.task_id, e.sample_index`,
    [prefix, purpose],
  );
  return rows.map(fromRow);
}

/** One episode, or undefined. */
export async function findEpisode(pool: pg.Pool, episodeId: string): Promise<EpisodeRow | undefined> {
  const { rows } = await pool.query(`${SELECT} WHERE e.episode_id = $1`, [episodeId]);
  return rows[0] && fromRow(rows[0]);
}
