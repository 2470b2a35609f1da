/**
 * The test workflow of retry-table.test.ts, bundled on its own (the test's workflowsPath): it calls
 * one probe activity through a product retry policy exported by workflows/activity-options.ts, or
 * by workflows/evaluation-activities.ts for the CPU worker's benchmark activities.
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { LONG_ACTIVITY, SHORT_ACTIVITY, TRAINER_ACTIVITY } from '../../workflows/activity-options.js';
import { LOCAL_SHORT_OPTIONS, LOCAL_TRIAL_OPTIONS } from '../../workflows/evaluation-activities.js';

/** The product's activity options, by the name the table uses. */
export const POLICIES = {
  long: LONG_ACTIVITY,
  short: SHORT_ACTIVITY,
  trainer: TRAINER_ACTIVITY,
  evalTrial: LOCAL_TRIAL_OPTIONS,
  evalShort: LOCAL_SHORT_OPTIONS,
} as const;
export type PolicyName = keyof typeof POLICIES;

/** What the probe activity does: throw the row's error on its first `failures` attempts (-1: all). */
export interface ProbeInput {
  readonly row: string;
  readonly failures: number;
}

export interface RetryProbeInput extends ProbeInput {
  readonly policy: PolicyName;
  /**
   * Waits between attempts, in ms, instead of the policy's (which add up to minutes): everything
   * else (maximum attempts, non-retryable types, timeouts) is the product's policy unchanged.
   */
  readonly interval?: number;
}

export interface ProbeActivities {
  /** Returns the attempt that succeeded. */
  probe(input: ProbeInput): Promise<number>;
}

export async function RetryProbe(input: RetryProbeInput): Promise<number> {
  const policy: ActivityOptions = POLICIES[input.policy];
  const options: ActivityOptions =
    input.interval === undefined
      ? policy
      : {
          ...policy,
          retry: { ...policy.retry, initialInterval: input.interval, maximumInterval: input.interval },
        };
  const { probe } = proxyActivities<ProbeActivities>(options);
  return probe({ row: input.row, failures: input.failures });
}
