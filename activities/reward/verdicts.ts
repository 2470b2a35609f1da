import type { Judgement } from '../../schemas/rubric-judge.js';
import type { RubricVerdicts } from './reward.js';

/** The judgement with every list sorted by index, i.e. in rubric order (what is stored). */
export function sortedJudgement(judgement: Judgement): Judgement {
  return {
    forbidden: byIndex(judgement.forbidden),
    subGoals: byIndex(judgement.subGoals),
    requiredInteractions: byIndex(judgement.requiredInteractions),
  };
}

function byIndex<T extends { readonly index: number }>(verdicts: readonly T[]): T[] {
  return [...verdicts].sort((a, b) => a.index - b.index);
}

/** The booleans the reward is computed from, in rubric order. */
export function verdictsOf(judgement: Judgement): RubricVerdicts {
  const sorted = sortedJudgement(judgement);
  return {
    forbiddenViolated: sorted.forbidden.map((v) => v.violated),
    subGoalsAchieved: sorted.subGoals.map((v) => v.achieved),
    interactionsSatisfied: sorted.requiredInteractions.map((v) => v.satisfied),
  };
}
