/**
 * A judge that cannot grade one rollout does not fail the run (issue 18). The model layer repairs
 * a malformed answer once; if it is still malformed, the judge is drawn again (a new call, its own
 * repair); if that fails too, the rollout is recorded in `unjudged_rollouts` and left out of the
 * batch, never scored. GrpoTraining fails the run only when too many of an iteration's rollouts
 * are unjudged (buildIterationBatch, maxUnjudgedFraction). Endpoint failures are not judge
 * answers: they stay errors, retried by the activity.
 */
import type { JudgeInputData } from '../../schemas/rubric-judge.js';
import { StructuredOutputRejectedError } from '../llm/index.js';
import { judgeEpisode, type JudgeDependencies, type JudgementSummary } from './judge.js';

/** Judge draws per rollout before it is recorded as unjudged: the first and one redraw. */
export const JUDGE_DRAWS = 2;

/** A rollout the judge could not grade: why (the last rejection's reason), never a score. */
export interface UnjudgedRollout {
  readonly episodeId: string;
  readonly unjudged: string;
}

/**
 * The rollout's judgement, or its record as unjudged after {@link JUDGE_DRAWS} malformed answers.
 * Idempotent: a stored judgement or unjudged record is returned without calling the judge.
 */
export async function judgeOrRecordUnjudged(
  deps: JudgeDependencies,
  input: Omit<JudgeInputData, 'draw'>,
): Promise<JudgementSummary | UnjudgedRollout> {
  const recorded = await findUnjudged(deps, input.episodeId);
  if (recorded) return recorded;
  let last: StructuredOutputRejectedError | undefined;
  for (let draw = 0; draw < JUDGE_DRAWS; draw++) {
    try {
      return await judgeEpisode(deps, { ...input, draw });
    } catch (error) {
      if (!(error instanceof StructuredOutputRejectedError)) throw error;
      last = error; // recorded in llm_rejections by the model layer; draw again
    }
  }
  await deps.pool.query(
    `INSERT INTO unjudged_rollouts (episode_id, task_id, run_id, reason, detail, attempts)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (episode_id) DO NOTHING`,
    [input.episodeId, input.taskId, input.runId, last!.reason, last!.detail.slice(0, 2_000), JUDGE_DRAWS],
  );
  // Read back: when a concurrent attempt recorded first, its record is the one that counts.
  return (await findUnjudged(deps, input.episodeId))!;
}

async function findUnjudged(
  deps: JudgeDependencies,
  episodeId: string,
): Promise<UnjudgedRollout | undefined> {
  const { rows } = await deps.pool.query<{ reason: string }>(
    'SELECT reason FROM unjudged_rollouts WHERE episode_id = $1',
    [episodeId],
  );
  return rows[0] && { episodeId, unjudged: rows[0].reason };
}
