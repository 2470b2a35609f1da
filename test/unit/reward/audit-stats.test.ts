import { describe, expect, it } from 'vitest';
import {
  checkpointStability,
  populationVariance,
  type AuditJudging,
} from '../../../activities/reward/audit-stats.js';

/** The judgings of one trajectory: one per score, null for a failed judging. */
function trajectory(
  policyStep: number,
  episodeId: string,
  rewards: readonly (number | null)[],
): AuditJudging[] {
  return rewards.map((reward) => ({ policyStep, episodeId, reward }));
}

describe('judge stability per checkpoint', () => {
  it('takes the population variance of each trajectory\u2019s scores: k identical scores give exactly 0', () => {
    expect(populationVariance([0.5, 0.5, 0.5])).toBe(0);
    // mean 0.5; squared distances 0.0625 each.
    expect(populationVariance([0.25, 0.75, 0.25, 0.75])).toBeCloseTo(0.0625, 15);
    // mean 1/3; (1/9 + 1/9 + 4/9) / 3 = 2/9.
    expect(populationVariance([0, 0, 1])).toBeCloseTo(2 / 9, 15);
  });

  it('averages the variance and std over trajectories and the score over every judging, per step in order', () => {
    const stats = checkpointStability([
      ...trajectory(4, 'run/eval3/t1/r0', [1, 1, 1]),
      ...trajectory(2, 'run/eval1/t1/r0', [0, 0, 1]),
      ...trajectory(2, 'run/eval1/t2/r0', [0.25, 0.75, 0.25]),
      ...trajectory(4, 'run/eval3/t2/r0', [0.5, 0.5, 0.5]),
    ]);
    expect(stats.map((s) => s.policyStep)).toEqual([2, 4]);
    const [early, late] = stats;
    const v1 = 2 / 9;
    const v2 = populationVariance([0.25, 0.75, 0.25]); // mean 5/12: 2/9 * 0.25 = 1/18
    expect(v2).toBeCloseTo(1 / 18, 15);
    expect(early!.meanVariance).toBeCloseTo((v1 + v2) / 2, 15);
    expect(early!.meanStd).toBeCloseTo((Math.sqrt(v1) + Math.sqrt(v2)) / 2, 15);
    expect(early!.meanScore).toBeCloseTo((1 + 1.25) / 6, 15);
    expect(early).toMatchObject({ trajectories: 2, scored: 6, failures: 0, trajectoriesWithVariance: 2 });
    expect(late).toMatchObject({ meanVariance: 0, meanStd: 0, scored: 6, failures: 0 });
    expect(late!.meanScore).toBeCloseTo(0.75, 15);
  });

  it('counts a failed judging as a failure and leaves it out of every mean, never as a score of 0', () => {
    const [stats] = checkpointStability([
      ...trajectory(1, 'a', [0.5, null, 0.5]),
      ...trajectory(1, 'b', [1, 0, null]),
    ]);
    expect(stats).toMatchObject({ trajectories: 2, scored: 4, failures: 2, trajectoriesWithVariance: 2 });
    expect(stats!.meanScore).toBeCloseTo(2 / 4, 15);
    // a: variance 0; b: scores [1, 0], variance 0.25.
    expect(stats!.meanVariance).toBeCloseTo(0.125, 15);
    expect(stats!.meanStd).toBeCloseTo(0.25, 15);
  });

  it('leaves a trajectory with fewer than 2 scores out of the variance, and says null where nothing was scored', () => {
    const [partly, none] = checkpointStability([
      ...trajectory(0, 'a', [0.5, null]),
      ...trajectory(0, 'b', [0, 1]),
      ...trajectory(3, 'c', [null, null]),
    ]);
    expect(partly).toMatchObject({ trajectories: 2, scored: 3, failures: 1, trajectoriesWithVariance: 1 });
    expect(partly!.meanVariance).toBeCloseTo(0.25, 15);
    expect(partly!.meanScore).toBeCloseTo(0.5, 15);
    expect(none).toEqual({
      policyStep: 3,
      trajectories: 1,
      scored: 0,
      failures: 2,
      meanScore: null,
      meanVariance: null,
      meanStd: null,
      trajectoriesWithVariance: 0,
    });
  });
});
