import { z } from 'zod';
import { markedJudgeControlsSchema } from './judge-controls.js';
import { EvalEndpointSchema, EvalSamplingSchema, TrialWallSecondsSchema } from './evaluation-contract.js';
import { ModelRoleSchema } from './model-endpoint.js';
import { TemplatesSchema } from './templates.js';

/**
 * Held-out synthetic tasks as a benchmark of an Evaluation run: kept tasks of a synthesis run that
 * a GrpoTraining run with the same seed and `heldOutTasks` never trained on, played by the policy in
 * the mock world (the tool and user simulators) and judged against their rubrics (seed eq. 5). Run
 * on the CPU worker; trials are stored in eval_trials beside the other benchmarks'.
 */
export const SyntheticBenchmarkSchema = z
  .object({
    synthesisRunId: z
      .string()
      .min(1)
      .describe('The synthesis run (or imported dataset) whose kept tasks are used.'),
    heldOutTasks: z
      .number()
      .int()
      .min(1)
      .describe(
        'The held-out split of a GrpoTraining run with this seed: the same tasks its own evaluation uses.',
      ),
    seed: z.number().int().min(0).default(0).describe('The training run’s seed (the split derives from it).'),
    trials: z.number().int().min(1).max(32).default(4).describe('Trials per task: Avg@k.'),
    maxTurns: z.number().int().min(1).max(64).default(16),
    toolSimulator: ModelRoleSchema.default({ sampling: { temperature: 0.2, topP: 1, maxTokens: 512 } }),
    userSimulator: ModelRoleSchema.default({ sampling: { temperature: 0.3, topP: 1, maxTokens: 256 } }),
    judge: ModelRoleSchema.default({ sampling: { temperature: 0, topP: 1, maxTokens: 1024 } }),
    judgeControls: markedJudgeControlsSchema(
      "per task, once per run: an empty transcript, which reaches no sub-goal, and one that openly does the task's first forbidden behaviour",
    ),
    templates: TemplatesSchema.default({ version: 'v1', overrides: {} }),
    taskIds: z.array(z.string().min(1)).min(1).optional().describe('Only these held-out tasks.'),
    limit: z.number().int().min(1).optional().describe('Only the first N held-out tasks.'),
  })
  .strict();
export type SyntheticBenchmark = z.infer<typeof SyntheticBenchmarkSchema>;

/** Listing the held-out tasks (`listSyntheticBenchmarkTasks`). */
export const SyntheticListInputSchema = z
  .object({
    synthesisRunId: z.string().min(1),
    heldOutTasks: z.number().int().min(1),
    seed: z.number().int().min(0),
    taskIds: z.array(z.string()).optional(),
    limit: z.number().int().min(1).optional(),
  })
  .strict();
export type SyntheticListInput = z.infer<typeof SyntheticListInputSchema>;

/** One (task, trial) of the held-out tasks (`runSyntheticBenchmarkTrial`). */
export const SyntheticTrialInputSchema = z
  .object({
    evaluationId: z.string().min(1),
    group: z.string().min(1),
    taskId: z.string().min(1),
    trial: z.number().int().min(0),
    trials: z.number().int().min(1),
    policy: EvalEndpointSchema,
    sampling: EvalSamplingSchema,
    maxTurns: z.number().int().min(1).max(64),
    toolSimulator: ModelRoleSchema,
    userSimulator: ModelRoleSchema,
    judge: ModelRoleSchema,
    templates: TemplatesSchema,
    wallSeconds: TrialWallSecondsSchema.optional(),
  })
  .strict();
export type SyntheticTrialInput = z.input<typeof SyntheticTrialInputSchema>;
