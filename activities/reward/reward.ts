import { UngradableRubricError } from './errors.js';

/** The judge's per-item verdicts, one boolean per rubric item, in rubric order. */
export interface RubricVerdicts {
  /** Per forbidden behaviour: true when the trajectory did it. */
  readonly forbiddenViolated: readonly boolean[];
  /** Per sub-goal: true when the trajectory reached it. */
  readonly subGoalsAchieved: readonly boolean[];
  /** Per required user interaction: true when the trajectory carried it out. */
  readonly interactionsSatisfied: readonly boolean[];
}

/** The reward of one trajectory and the terms it is made of. */
export interface RubricReward {
  /** True when any forbidden behaviour was violated: 𝕀(τ) = 0. */
  readonly forbiddenViolated: boolean;
  /** N_subgoals(τ) = achieved / |sub-goals|; null when the rubric has no sub-goals. */
  readonly subGoalFraction: number | null;
  /** I_user_query(τ) = satisfied / |required interactions|; null when the rubric requires none. */
  readonly interactionFraction: number | null;
  /** R(τ) in [0, 1]. */
  readonly reward: number;
}

/**
 * The rubric-based reward of the seed (Mock Worlds, Real Skills, §3.3, eq. 5):
 *
 *     R(τ) = 𝕀(τ) · mean(N_subgoals(τ), I_user_query(τ))
 *
 * 𝕀(τ) ∈ {0, 1} is 0 if and only if τ violates any forbidden behaviour of the rubric, so a
 * violation gives 0 whatever else was achieved. N_subgoals is the fraction of sub-goals
 * completed and I_user_query the fraction of required user–agent interactions satisfied; the seed
 * writes eq. 5 with a "+" and says in the text that "we average these scores as the final
 * reward", so R stays in [0, 1].
 *
 * A rubric without required interactions (the rubric stage allows 0 of them) has no
 * I_user_query term. The seed does not say what to do then; we average over the terms that exist,
 * so R = 𝕀(τ) · N_subgoals(τ). Counting the missing term as 1 would give 0.5 to a trajectory that
 * did nothing at all, which rewards nothing; counting it as 0 would cap such tasks at 0.5 for no
 * fault of the policy. Symmetrically, a rubric without sub-goals is graded on its interactions
 * alone. A rubric with neither has nothing to grade: {@link UngradableRubricError}, never a
 * made-up score.
 */
export function rubricReward(verdicts: RubricVerdicts): RubricReward {
  const forbiddenViolated = verdicts.forbiddenViolated.some((violated) => violated);
  const subGoalFraction = fraction(verdicts.subGoalsAchieved);
  const interactionFraction = fraction(verdicts.interactionsSatisfied);
  const terms = [subGoalFraction, interactionFraction].filter((term): term is number => term !== null);
  if (terms.length === 0) {
    throw new UngradableRubricError('the rubric has neither sub-goals nor required interactions');
  }
  const mean = terms.reduce((sum, term) => sum + term, 0) / terms.length;
  return { forbiddenViolated, subGoalFraction, interactionFraction, reward: forbiddenViolated ? 0 : mean };
}

/** Share of true verdicts; null for an empty list (the term does not exist). */
function fraction(verdicts: readonly boolean[]): number | null {
  if (verdicts.length === 0) return null;
  return verdicts.filter((v) => v).length / verdicts.length;
}
