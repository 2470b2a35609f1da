import { TRAINER_STEP_DEFAULTS } from '../../schemas/trainer-step.js';

/** Default ε of {@link groupAdvantages}: the trainer's `adv_eps` default (the trainer contract's). */
export const DEFAULT_ADVANTAGE_EPS = TRAINER_STEP_DEFAULTS.adv_eps;

/** Per-rollout advantages and how many groups carried no learning signal. */
export interface GroupAdvantages {
  /** A_i, in the order of the rewards given. */
  readonly advantages: number[];
  /** Distinct groups. */
  readonly numGroups: number;
  /** Groups with std(r) < ε (all rewards equal, or a single rollout): their A_i are all 0. */
  readonly zeroVarianceGroups: number;
}

/**
 * Group-normalized advantages of GRPO (Shao et al., 2024, "DeepSeekMath"; the seed trains with
 * GRPO, §3.4 and App. A):
 *
 *     A_i = (r_i − mean_g(r)) / (std_g(r) + ε)    within each group g of rollouts of one task
 *
 * The same definition as `group_advantages` in workers/trainer/mockworld_trainer/grpo.py, so TypeScript-side
 * metrics and batches agree with what the trainer optimizes: std is the sample
 * (Bessel-corrected, n − 1) standard deviation, as `torch.std` in the trainer, VERL and TRL; a
 * group whose std is below ε — all rewards equal, or a single rollout — has zero variance, gets
 * advantages of exactly 0 and is counted in `zeroVarianceGroups` (the seed's §3.1, eq. 1–2: such
 * groups carry no gradient). Computed in float64; the trainer returns float32, so values agree to
 * float32 precision.
 *
 * Rewards must be finite: a rollout that could not be scored is left out by the caller, never
 * passed in as 0.
 */
export function groupAdvantages(
  rewards: readonly number[],
  groupIds: readonly string[],
  eps: number = DEFAULT_ADVANTAGE_EPS,
): GroupAdvantages {
  if (rewards.length !== groupIds.length) {
    throw new RangeError(
      `rewards (${rewards.length}) and groupIds (${groupIds.length}) must be equally long`,
    );
  }
  if (!(eps > 0)) throw new RangeError(`eps must be > 0, got ${eps}`);
  const bad = rewards.findIndex((r) => !Number.isFinite(r));
  if (bad >= 0) throw new RangeError(`reward ${bad} is not a finite number (${rewards[bad]})`);

  const members = new Map<string, number[]>();
  groupIds.forEach((group, i) => {
    const list = members.get(group);
    if (list) list.push(i);
    else members.set(group, [i]);
  });
  const advantages = new Array<number>(rewards.length).fill(0);
  let zeroVarianceGroups = 0;
  for (const indices of members.values()) {
    const r = indices.map((i) => rewards[i]!);
    const mean = r.reduce((sum, x) => sum + x, 0) / r.length;
    const std = r.length > 1 ? Math.sqrt(r.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (r.length - 1)) : 0;
    if (!(std >= eps)) {
      zeroVarianceGroups += 1;
      continue;
    }
    indices.forEach((i, k) => (advantages[i] = (r[k]! - mean) / (std + eps)));
  }
  return { advantages, numGroups: members.size, zeroVarianceGroups };
}
