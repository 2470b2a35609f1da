import type { RetryPolicy } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { NON_RETRYABLE_ACTIVITY_ERRORS } from '../../activities/errors.js';
import { TRAINER_ERROR_TYPES } from '../../schemas/trainer-contract.js';
import { LONG_RETRY, SHORT_RETRY, TRAINER_RETRY } from '../../workflows/activity-options.js';

/**
 * The arithmetic of the retry policies (test/integration/retry-table.test.ts shows them at work on
 * a real worker). Each must outlast a PostgreSQL restart of a minute, during which every attempt
 * fails at once, with attempts left for a worker SIGKILL (which costs the attempt it cuts off);
 * and each must end.
 */
const POLICIES = { LONG_RETRY, SHORT_RETRY, TRAINER_RETRY } as const;

/** When each retry starts, in ms after the first attempt failed at once (attempts take no time). */
function retryTimes(policy: RetryPolicy): number[] {
  const times: number[] = [];
  let wait = policy.initialInterval as number;
  let at = 0;
  for (let attempt = 2; attempt <= policy.maximumAttempts!; attempt++) {
    at += wait;
    times.push(at);
    wait = Math.min(wait * policy.backoffCoefficient!, policy.maximumInterval as number);
  }
  return times;
}

describe('the retry policies', () => {
  it.each(Object.entries(POLICIES))('%s is bounded, in attempts and in every wait', (_, policy) => {
    expect(policy.maximumAttempts).toBeGreaterThan(1);
    expect(Number.isFinite(policy.maximumAttempts)).toBe(true);
    expect(typeof policy.initialInterval).toBe('number');
    expect(typeof policy.maximumInterval).toBe('number');
    expect(policy.backoffCoefficient).toBeGreaterThan(1);
  });

  it.each(Object.entries(POLICIES))(
    '%s outlasts a minute of PostgreSQL down with an attempt to spare for a worker kill',
    (_, policy) => {
      const times = retryTimes(policy);
      const firstAfterOutage = times.findIndex((t) => t > 60_000);
      expect(firstAfterOutage).toBeGreaterThanOrEqual(0);
      // Attempts numbered from 1: the first, the failed retries, the one after the outage, one spare.
      expect(policy.maximumAttempts!).toBeGreaterThanOrEqual(1 + firstAfterOutage + 1 + 1);
    },
  );

  it('take their non-retryable types from the error classes and the trainer contract', () => {
    expect(LONG_RETRY.nonRetryableErrorTypes).toEqual(NON_RETRYABLE_ACTIVITY_ERRORS);
    expect(SHORT_RETRY.nonRetryableErrorTypes).toEqual(NON_RETRYABLE_ACTIVITY_ERRORS);
    expect(TRAINER_RETRY.nonRetryableErrorTypes).toEqual([...TRAINER_ERROR_TYPES]);
    // The ones the issue found missing from the literal lists.
    expect(NON_RETRYABLE_ACTIVITY_ERRORS).toEqual(
      expect.arrayContaining([
        'TrainingPlanError',
        'TrainerBatchError',
        'TaskNotFoundError',
        'TaskNotReadyError',
        'EpisodeMismatchError',
        'UngradableRubricError',
        'EpisodeNotGradableError',
        'StructuredOutputRejectedError',
        'ModelRequestRejectedError',
      ]),
    );
  });
});
