import { proxyActivities } from '@temporalio/workflow';
import { TRAINER_ERROR_TYPES, type TrainerActivities } from '../schemas/trainer-contract.js';

/**
 * The Python trainer's activities, called by name on its task queue; their names, inputs and
 * outputs are the contract of schemas/trainer-contract.ts (the trainer validates against its JSON
 * Schema). Re-exported for the workflows that call them.
 */
export type { TrainerActivities };
export type { TrainerStepInput, TrainerStepResult } from '../schemas/trainer-step.js';

/**
 * The trainer's activities on `taskQueue`. Steps are long and heartbeat; errors a retry cannot
 * fix are non-retryable, anything else (a killed worker, CUDA out of memory) is retried, and the
 * trainer's exactly-once bookkeeping makes a retried step that was already applied a no-op.
 */
export function trainerActivities(taskQueue: string) {
  return proxyActivities<TrainerActivities>({
    taskQueue,
    startToCloseTimeout: '4 hours',
    heartbeatTimeout: '1 minute',
    retry: {
      maximumInterval: '1 minute',
      nonRetryableErrorTypes: [...TRAINER_ERROR_TYPES],
    },
  });
}
