import { describe, expect, it } from 'vitest';
import { rubricReward, UngradableRubricError } from '../../../activities/reward/index.js';

describe('the rubric reward (seed eq. 5)', () => {
  it('is 0 when any forbidden behaviour is violated, whatever else was achieved', () => {
    expect(
      rubricReward({
        forbiddenViolated: [false, true],
        subGoalsAchieved: [true, true, true],
        interactionsSatisfied: [true],
      }),
    ).toEqual({ forbiddenViolated: true, subGoalFraction: 1, interactionFraction: 1, reward: 0 });
  });

  it('averages the sub-goal fraction and the interaction fraction when nothing forbidden happened', () => {
    const result = rubricReward({
      forbiddenViolated: [false, false],
      subGoalsAchieved: [true, false, true, false],
      interactionsSatisfied: [true, true, false],
    });
    expect(result.forbiddenViolated).toBe(false);
    expect(result.subGoalFraction).toBe(0.5);
    expect(result.interactionFraction).toBeCloseTo(2 / 3, 12);
    expect(result.reward).toBeCloseTo((0.5 + 2 / 3) / 2, 12);
  });

  it('is 1 for a perfect trajectory and 0 for one that achieved nothing', () => {
    const perfect = {
      forbiddenViolated: [false],
      subGoalsAchieved: [true, true],
      interactionsSatisfied: [true],
    };
    expect(rubricReward(perfect).reward).toBe(1);
    const nothing = {
      forbiddenViolated: [false],
      subGoalsAchieved: [false, false],
      interactionsSatisfied: [false],
    };
    expect(rubricReward(nothing).reward).toBe(0);
  });

  it('is the sub-goal fraction alone when the rubric requires no interaction, so doing nothing earns nothing', () => {
    expect(
      rubricReward({
        forbiddenViolated: [false],
        subGoalsAchieved: [true, false, false],
        interactionsSatisfied: [],
      }),
    ).toEqual({ forbiddenViolated: false, subGoalFraction: 1 / 3, interactionFraction: null, reward: 1 / 3 });
    expect(
      rubricReward({
        forbiddenViolated: [false],
        subGoalsAchieved: [false, false],
        interactionsSatisfied: [],
      }).reward,
    ).toBe(0);
  });

  it('is the interaction fraction alone when the rubric has no sub-goals, and needs no forbidden list', () => {
    expect(
      rubricReward({ forbiddenViolated: [], subGoalsAchieved: [], interactionsSatisfied: [true, false] }),
    ).toEqual({ forbiddenViolated: false, subGoalFraction: null, interactionFraction: 0.5, reward: 0.5 });
  });

  it('refuses to score a rubric with neither sub-goals nor required interactions', () => {
    expect(() =>
      rubricReward({ forbiddenViolated: [false], subGoalsAchieved: [], interactionsSatisfied: [] }),
    ).toThrow(UngradableRubricError);
  });
});
