import { describe, expect, it } from 'vitest';
import { groupAdvantages } from '../../../activities/reward/index.js';

describe('group-normalized advantages', () => {
  it('uses the sample (n − 1) standard deviation of each group, like the Python trainer', () => {
    // Group a: mean 0.5, sample std sqrt(((-0.5)^2 + 0.5^2) / 1) = sqrt(0.5).
    const { advantages, numGroups, zeroVarianceGroups } = groupAdvantages([0, 1], ['a', 'a'], 1e-6);
    const std = Math.sqrt(0.5);
    expect(advantages[0]).toBeCloseTo(-0.5 / (std + 1e-6), 12);
    expect(advantages[1]).toBeCloseTo(0.5 / (std + 1e-6), 12);
    expect(numGroups).toBe(1);
    expect(zeroVarianceGroups).toBe(0);
  });

  it('normalizes within each group, keeps the input order and sums to zero per group', () => {
    // Interleaved groups: a = [1, 0.5, 0] (mean 0.5, sample std 0.5), b = [0.2, 0.6] (mean 0.4).
    const rewards = [1, 0.2, 0.5, 0.6, 0];
    const groups = ['a', 'b', 'a', 'b', 'a'];
    const { advantages, numGroups, zeroVarianceGroups } = groupAdvantages(rewards, groups);
    const eps = 1e-6;
    const stdB = Math.sqrt((0.2 ** 2 + 0.2 ** 2) / 1);
    expect(advantages[0]).toBeCloseTo(0.5 / (0.5 + eps), 12);
    expect(advantages[2]).toBeCloseTo(0, 12);
    expect(advantages[4]).toBeCloseTo(-0.5 / (0.5 + eps), 12);
    expect(advantages[1]).toBeCloseTo(-0.2 / (stdB + eps), 12);
    expect(advantages[3]).toBeCloseTo(0.2 / (stdB + eps), 12);
    expect(advantages[0]! + advantages[2]! + advantages[4]!).toBeCloseTo(0, 12);
    expect(numGroups).toBe(2);
    expect(zeroVarianceGroups).toBe(0);
  });

  it('gives exactly zero advantages to a group whose rewards are all equal, and counts it', () => {
    const { advantages, numGroups, zeroVarianceGroups } = groupAdvantages(
      [0.75, 0.75, 0.75, 0, 1],
      ['same', 'same', 'same', 'mixed', 'mixed'],
    );
    expect(advantages.slice(0, 3)).toEqual([0, 0, 0]);
    expect(advantages[3]).toBeLessThan(0);
    expect(advantages[4]).toBeGreaterThan(0);
    expect(numGroups).toBe(2);
    expect(zeroVarianceGroups).toBe(1);
  });

  it('counts a group of one rollout, and one whose spread is below eps, as zero-variance', () => {
    const { advantages, zeroVarianceGroups } = groupAdvantages([0.3, 0.5, 0.5 + 1e-9], ['solo', 'g', 'g']);
    expect(advantages).toEqual([0, 0, 0]);
    expect(zeroVarianceGroups).toBe(2);
  });

  it('agrees with group_advantages of workers/trainer/mockworld_trainer/grpo.py to float32 precision', () => {
    // Printed by the trainer: group_advantages(torch.tensor([1, 0.2, 0.5, 0.6, 0]), ['a','b','a','b','a']).
    const fromTrainer = [
      0.9999979734420776, -0.7071042656898499, 0.0, 0.7071042656898499, -0.9999979734420776,
    ];
    const { advantages } = groupAdvantages([1, 0.2, 0.5, 0.6, 0], ['a', 'b', 'a', 'b', 'a']);
    advantages.forEach((a, i) => expect(a).toBeCloseTo(fromTrainer[i]!, 6));
  });

  it('rejects rewards that are not finite and mismatched lengths instead of scoring them as 0', () => {
    expect(() => groupAdvantages([0, Number.NaN], ['a', 'a'])).toThrow(/not a finite number/);
    expect(() => groupAdvantages([0, 1], ['a'])).toThrow(/equally long/);
  });
});
