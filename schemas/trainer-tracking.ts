/**
 * `trainer.trackIteration`: a GRPO iteration's metrics, as the viewer stores them, sent to the
 * trainer's experiment trackers (TensorBoard by default, W&B and MLflow when configured;
 * workers/trainer/mockworld_trainer/tracking.py) at the iteration's trainer step, so the curves
 * there are the viewer's. The step's own metrics (`trainer.*`) the trainer tracks when it applies it.
 */
import { z } from 'zod';
import { TrainerRunIdSchema, TrainerStepNumberSchema } from './trainer-step.js';

/** A config parameter: a JSON scalar (nested objects are flattened to dotted names by the trainer). */
const ConfigValueSchema = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** Input of `trainer.trackIteration`. */
export const TrackIterationInputSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  step: TrainerStepNumberSchema.describe('The trainer step the iteration applied (its global step).'),
  metrics: z
    .record(z.string(), z.unknown())
    .describe(
      "The iteration's metrics as recorded for the viewer: every finite numeric leaf is tracked by its " +
        'dotted path, except `iteration` (the x axis) and `trainer.*` (tracked with the step).',
    ),
  config: z
    .record(z.string(), z.union([ConfigValueSchema, z.record(z.string(), ConfigValueSchema)]))
    .optional()
    .describe("The run's hyper-parameters, tracked once per run; never endpoints or keys."),
});

/** Output of `trainer.trackIteration`. */
export const TrackIterationResultSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  step: TrainerStepNumberSchema,
  written: z
    .boolean()
    .describe('False when this step was tracked before (a retry) or no tracker is configured.'),
});
