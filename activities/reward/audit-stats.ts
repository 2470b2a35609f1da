/**
 * The numbers of a judge stability audit (seed 000 App. B, Figure 6: "score variance (repeat 6
 * times) across training steps"). Pure: the audit's activity reads the stored judgings and hands
 * them here, and the unit test checks the arithmetic on its own.
 */
import type { CheckpointStability } from '../../schemas/judge-audit-spec.js';

/** One judging of one audited trajectory: a score, or a failure (never both). */
export interface AuditJudging {
  readonly policyStep: number;
  readonly episodeId: string;
  /** R(τ) the judge gave; null when it failed. */
  readonly reward: number | null;
}

/**
 * Per checkpoint (ascending policy step): the mean of every score, and the spread of each
 * trajectory's scores across its k judgings, averaged over trajectories. The variance of a
 * trajectory is the population variance of its scores (mean squared distance to their own mean):
 * the judge's own spread, with no sample correction, so k identical scores give exactly 0. A
 * failed judging is counted in `failures` and left out of every mean; a trajectory with fewer
 * than 2 scores has no spread and is left out of the variance (its scores still count in the
 * mean score).
 */
export function checkpointStability(judgings: readonly AuditJudging[]): CheckpointStability[] {
  const steps = new Map<number, Map<string, AuditJudging[]>>();
  for (const judging of judgings) {
    const episodes = steps.get(judging.policyStep) ?? new Map<string, AuditJudging[]>();
    steps.set(judging.policyStep, episodes);
    episodes.set(judging.episodeId, [...(episodes.get(judging.episodeId) ?? []), judging]);
  }
  return [...steps.keys()]
    .sort((a, b) => a - b)
    .map((policyStep) => {
      const trajectories = [...steps.get(policyStep)!.values()];
      const scoresOf = (t: readonly AuditJudging[]) =>
        t.map((j) => j.reward).filter((r): r is number => r !== null);
      const allScores = trajectories.flatMap(scoresOf);
      const spreads = trajectories
        .map(scoresOf)
        .filter((scores) => scores.length >= 2)
        .map(populationVariance);
      return {
        policyStep,
        trajectories: trajectories.length,
        scored: allScores.length,
        failures: trajectories.flat().length - allScores.length,
        meanScore: mean(allScores),
        meanVariance: mean(spreads),
        meanStd: mean(spreads.map(Math.sqrt)),
        trajectoriesWithVariance: spreads.length,
      };
    });
}

/** Mean squared distance of `values` to their mean (values non-empty). */
export function populationVariance(values: readonly number[]): number {
  const m = values.reduce((sum, v) => sum + v, 0) / values.length;
  return values.reduce((sum, v) => sum + (v - m) ** 2, 0) / values.length;
}

/** Arithmetic mean; null for no values (nothing to average, never a made-up 0). */
function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((sum, v) => sum + v, 0) / values.length;
}
