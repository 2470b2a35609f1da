/**
 * The reward of GRPO training in the mock world (seed §3.3–3.4): an LLM judge grades a finished
 * episode against its task's rubric, the rubric reward R(τ) of eq. 5 is computed and stored, and
 * group-normalized advantages are derived as the trainer does. The judge's input and answer
 * contracts are schemas/rubric-judge.ts.
 */
import { Context } from '@temporalio/activity';
import type { ModelClient } from '../llm/index.js';
import { getPool } from '../store/db.js';
import type { JudgeInputData } from '../../schemas/rubric-judge.js';
import { judgeEpisode, type JudgementSummary } from './judge.js';

export { DEFAULT_ADVANTAGE_EPS, groupAdvantages, type GroupAdvantages } from './advantages.js';
export { EpisodeNotGradableError, UngradableRubricError } from './errors.js';
export { JUDGE_ROLE, judgeEpisode, type JudgeDependencies, type JudgementSummary } from './judge.js';
export { verdictsOf } from './verdicts.js';
export { rubricReward, type RubricReward, type RubricVerdicts } from './reward.js';

/** The reward activities, bound to one database and model client. */
export function createRewardActivities(databaseUrl: string, models: ModelClient) {
  return {
    /**
     * Judges one finished rollout and stores its reward; a retry returns the stored judgement
     * without a model call. Not retryable: `UngradableRubricError`, `EpisodeNotGradableError`,
     * `StructuredOutputRejectedError`.
     */
    async judgeEpisode(input: JudgeInputData): Promise<JudgementSummary> {
      return judgeEpisode({ pool: getPool(databaseUrl), models, signal: activitySignal() }, input);
    },
  };
}

function activitySignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined; // called outside an activity (scripts, benchmarks)
  }
}
