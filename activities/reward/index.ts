/**
 * The reward of GRPO training in the mock world (seed §3.3–3.4): an LLM judge grades a finished
 * episode against its task's rubric, the rubric reward R(τ) of eq. 5 is computed and stored, and
 * group-normalized advantages are derived as the trainer does. The judge's input and answer
 * contracts are schemas/rubric-judge.ts.
 */

export { DEFAULT_ADVANTAGE_EPS, groupAdvantages, type GroupAdvantages } from './advantages.js';
export { EpisodeNotGradableError, UngradableRubricError } from './errors.js';
export { JUDGE_ROLE, judgeEpisode, type JudgeDependencies, type JudgementSummary } from './judge.js';
export { verdictsOf } from './verdicts.js';
export { JUDGE_DRAWS, judgeOrRecordUnjudged, type UnjudgedRollout } from './unjudged.js';
export {
  ensureRubricControls,
  JUDGE_CONTROL_ROLE,
  rubricControlTally,
  type RubricControlTally,
} from './rubric-controls.js';
export { rubricReward, type RubricReward, type RubricVerdicts } from './reward.js';
