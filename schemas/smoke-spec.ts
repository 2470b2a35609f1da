import { z } from 'zod';
import { ModelRoleSchema, RunBudgetSchema } from './model-endpoint.js';

/**
 * The smoke pipeline: asks the model the same prompt `steps` times (sample index = step) through
 * the real worker, model layer and cache. It proves a deployment end to end before a long run.
 */
export const SmokeSpecSchema = z
  .object({
    kind: z.literal('Smoke'),
    budgetUsd: RunBudgetSchema.optional(),
    name: z.string().min(1).max(80).default('smoke').describe('Label shown in reports.'),
    prompt: z.string().min(1).max(20_000).default('Say hello to mockworld in one short sentence.'),
    steps: z.number().int().min(1).max(1_000).default(3).describe('Model calls, one per step.'),
    model: ModelRoleSchema.default({ sampling: { temperature: 0.7, topP: 1, maxTokens: 48 } }),
  })
  .strict();

/** Validated smoke spec. */
export type SmokeSpec = z.infer<typeof SmokeSpecSchema>;
