/**
 * The contract between the TypeScript workflows and the Python trainer (workers/trainer): every
 * activity of the GPU task queue by name, with its input and output, and the error types a retry
 * cannot fix. This file and the trainer-*.ts files it imports are the only definition: the
 * TypeScript types are inferred from them, and emit-json-schema.ts writes them as JSON Schema into
 * schemas/json/trainer/, which the trainer validates its inputs against (a test fails when the
 * committed files are stale).
 */
import { z } from 'zod';
import { TrainerModelSpecSchema } from './trainer-model.js';
import { TRAINER_ERROR_TYPES } from './worker-error-types.js';
import {
  TrainerRunIdSchema,
  TrainerStepInputSchema,
  TrainerStepNumberSchema,
  TrainerStepResultSchema,
  GrpoStepMetricsSchema,
  SftStepMetricsSchema,
} from './trainer-step.js';
import { TrackIterationInputSchema, TrackIterationResultSchema } from './trainer-tracking.js';

/**
 * `ApplicationError.type`s of trainer failures that the same request would hit again
 * (non-retryable), defined in worker-error-types.ts (no zod there: workflow code imports them).
 */
export { TRAINER_ERROR_TYPES };
export const TrainerErrorTypeSchema = z.enum(TRAINER_ERROR_TYPES);

/** Input of `trainer.saveCheckpoint`: pins a step's weights against retention (default: the latest). */
export const SaveCheckpointInputSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  step: TrainerStepNumberSchema.optional(),
});

/** Output of `trainer.saveCheckpoint`. */
export const SaveCheckpointResultSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  step: TrainerStepNumberSchema,
  model_path: z.string().min(1),
  pinned: z.literal(true),
});

/** Input of `trainer.registerRun`: fixes the run's model before its first step. */
export const RegisterRunInputSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  model: TrainerModelSpecSchema,
});

/** Input of `trainer.latestPolicy`. */
export const LatestPolicyInputSchema = z.strictObject({ run_id: TrainerRunIdSchema });

/** Output of `trainer.latestPolicy` and `trainer.registerRun`: the run's newest applied step. */
export const PolicyResultSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  step: z.number().int().min(0).describe('0: no step applied yet (the base model).'),
  model_path: z
    .string()
    .min(1)
    .nullable()
    .describe(
      "The step's weights; at step 0 the pretrained base path, null for a tiny model or an unnamed model.",
    ),
  adapter_path: z
    .string()
    .min(1)
    .nullable()
    .describe("The step's LoRA adapter directory; null at step 0 and when the run trains every weight."),
  base_model: TrainerModelSpecSchema.nullable().describe('The recorded model spec, every default filled.'),
  kind: z.enum(['grpo', 'sft']).nullable(),
  metrics: z.union([GrpoStepMetricsSchema, SftStepMetricsSchema]).nullable(),
});

/** Every activity the trainer serves, by the name workflows call it with. */
export const TRAINER_ACTIVITIES = {
  'trainer.grpoStep': { input: TrainerStepInputSchema, output: TrainerStepResultSchema },
  'trainer.sftStep': { input: TrainerStepInputSchema, output: TrainerStepResultSchema },
  'trainer.saveCheckpoint': { input: SaveCheckpointInputSchema, output: SaveCheckpointResultSchema },
  'trainer.registerRun': { input: RegisterRunInputSchema, output: PolicyResultSchema },
  'trainer.latestPolicy': { input: LatestPolicyInputSchema, output: PolicyResultSchema },
  'trainer.trackIteration': { input: TrackIterationInputSchema, output: TrackIterationResultSchema },
} as const;

export type TrainerActivityName = keyof typeof TRAINER_ACTIVITIES;

/** The trainer's activities as workflows call them (for `proxyActivities`). */
export type TrainerActivities = {
  [K in TrainerActivityName]: (
    input: z.input<(typeof TRAINER_ACTIVITIES)[K]['input']>,
  ) => Promise<z.output<(typeof TRAINER_ACTIVITIES)[K]['output']>>;
};
