import type { ActivityOptions } from '@temporalio/workflow';

/**
 * Options shared by every mockworld activity. Activities heartbeat from half this timeout on
 * (activities/heartbeat.ts), so a killed worker is noticed within `heartbeatTimeout` and its work
 * retried elsewhere; start-to-close only bounds a call that is alive but stuck.
 */
export const LONG_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '20 seconds',
  retry: {
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['StructuredOutputRejectedError', 'ModelRequestRejectedError'],
  },
};

/** Short bookkeeping activities (run rows): a quick retry beats a long wait. */
export const SHORT_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '30 seconds' },
};
