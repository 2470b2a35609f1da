import type pg from 'pg';

/** Results of one benchmark group for one policy (model name; a checkpoint is `<run>@<step>`). */
export interface EvaluationResult {
  readonly benchmark: string;
  readonly taskGroup: string;
  readonly policy: string;
  readonly trials: number;
  readonly tasks: number;
  readonly rewardMean: number;
  readonly failures: number;
}

/** The model an evaluation trial's settings name, wherever its config keeps it. */
const POLICY = `coalesce(config #>> '{agent,model}', config #>> '{agent,endpoint,model}', config #>> '{endpoint,model}', config #>> '{model}', '—')`;

/** Mean reward per benchmark, group and policy of an Evaluation run (table eval_trials). */
export async function evaluationResults(pool: pg.Pool, evaluationId: string): Promise<EvaluationResult[]> {
  const { rows } = await pool.query<{
    benchmark: string;
    task_group: string;
    policy: string;
    trials: number;
    tasks: number;
    reward_mean: number;
    failures: number;
  }>(
    `SELECT benchmark, task_group, ${POLICY} AS policy, count(*)::int AS trials, count(DISTINCT task_id)::int AS tasks,
            avg(reward)::float8 AS reward_mean, count(failure)::int AS failures
       FROM eval_trials WHERE evaluation_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [evaluationId],
  );
  return rows.map((r) => ({
    benchmark: r.benchmark,
    taskGroup: r.task_group,
    policy: r.policy,
    trials: r.trials,
    tasks: r.tasks,
    rewardMean: r.reward_mean,
    failures: r.failures,
  }));
}
