/**
 * The test workflow of worker-restart.test.ts, bundled on its own: one activity under the
 * product's long retry policy, but with a heartbeat timeout far longer than the test, so that a
 * retry of a killed worker's attempt within the test can only come from the attempt journal.
 */
import { proxyActivities } from '@temporalio/workflow';
import { LONG_RETRY } from '../../workflows/activity-options.js';

export interface HoldActivities {
  /** Runs until the test releases it; returns the attempt and the worker process that ran it. */
  hold(): Promise<{ attempt: number; pid: number }>;
}

const { hold } = proxyActivities<HoldActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 minutes',
  retry: LONG_RETRY,
});

export async function HoldProbe(): Promise<{ attempt: number; pid: number }> {
  return hold();
}
