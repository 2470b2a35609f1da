import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { EVAL_ERROR_TYPES, type EvalActivities } from '../schemas/evaluation-contract.js';

/**
 * The Python evaluation worker's activities on `taskQueue` (schemas/evaluation-contract.ts).
 * A trial heartbeats its step count while its process runs, so a killed worker is noticed within
 * the heartbeat timeout and the trial retried elsewhere; a trial whose row is stored is never run
 * again, so retries are safe. An unreachable model endpoint (EvalModelUnreachable) is retried for
 * about 25 minutes of backoff before the run fails naming it; EVAL_ERROR_TYPES are never retried.
 */
const TRIAL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 30,
    nonRetryableErrorTypes: [...EVAL_ERROR_TYPES],
  },
};

/** Listing tasks and summarizing read files and rows: short, few retries. */
const SHORT_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 12,
    nonRetryableErrorTypes: [...EVAL_ERROR_TYPES],
  },
};

export function evalActivities(taskQueue: string) {
  const trial = proxyActivities<EvalActivities>({ ...TRIAL_OPTIONS, taskQueue });
  const short = proxyActivities<EvalActivities>({ ...SHORT_OPTIONS, taskQueue });
  return {
    runTrial: trial['eval.runTrial'],
    listTasks: short['eval.listTasks'],
    summarize: short['eval.summarize'],
  };
}
