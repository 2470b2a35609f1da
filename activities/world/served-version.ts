/**
 * Whether an agent turn came from the policy version its episode was scheduled for (issue 18).
 * GRPO's rollouts of iteration i must be samples of step i's weights: a replica that reloaded (or
 * had not yet reloaded) between the schedule and the call answers with another version, and a
 * rollout with such a turn is not on-policy. mockworld's policy server names the version in
 * `x-policy-version` (the step number); engines that do not send it cannot be checked here
 * (weight sync checks them before each iteration's rollouts). Pure.
 */

/** Policy versions of GRPO rollouts: `step-<n>`, n the trainer step whose weights sample them. */
const SCHEDULED = /^step-(\d+)$/;

/**
 * Why turn `turn` is off-policy, or undefined when it is not or cannot be told: the scheduled
 * version is not a trainer step (a teacher, a base model) or the server named no version.
 */
export function offPolicyTurn(
  scheduled: string,
  served: string | undefined,
  turn: number,
): string | undefined {
  const step = SCHEDULED.exec(scheduled)?.[1];
  if (step === undefined || served === undefined || served === step) return undefined;
  return `turn ${turn} was served by policy version ${served}, scheduled for ${scheduled}`;
}
