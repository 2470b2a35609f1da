import { proxyActivities } from '@temporalio/workflow';
import type { TrainerActivities } from '../schemas/trainer-contract.js';
import { TRAINER_ACTIVITY } from './activity-options.js';

/**
 * The Python trainer's activities, called by name on its task queue; their names, inputs and
 * outputs are the contract of schemas/trainer-contract.ts (the trainer validates against its JSON
 * Schema). Re-exported for the workflows that call them.
 */
export type { TrainerActivities };
export type { TrainerStepInput, TrainerStepResult } from '../schemas/trainer-step.js';

/**
 * The trainer's activities on `taskQueue`, under TRAINER_ACTIVITY's timeouts and bounded retries
 * (its non-retryable types are the contract's TRAINER_ERROR_TYPES).
 */
export function trainerActivities(taskQueue: string) {
  return proxyActivities<TrainerActivities>({ ...TRAINER_ACTIVITY, taskQueue });
}
