/**
 * `ApplicationError.type`s that the Python workers raise for failures the same request would hit
 * again (non-retryable). Kept free of zod: workflows/activity-options.ts and
 * workflows/evaluation-activities.ts import them, and workflow code evaluates every module it
 * imports once per workflow run (the SDK's reusable context re-runs the bundle's modules), so a
 * zod contract imported here cost each workflow start tens of ms of schema construction.
 */

/**
 * The trainer's (schemas/trainer-contract.ts): malformed input (the message names every bad path),
 * a step asked for before the one it needs, a step asked for again with another batch or model,
 * weights pruned from disk.
 */
export const TRAINER_ERROR_TYPES = [
  'TrainerBadRequest',
  'TrainerStepOutOfOrder',
  'TrainerStepMismatch',
  'TrainerCheckpointMissing',
] as const;

/** The evaluation worker's (schemas/evaluation-contract.ts). */
export const EVAL_ERROR_TYPES = ['EvalBadInput', 'EvalTrialConflict'] as const;
