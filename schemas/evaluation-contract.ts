import { z } from 'zod';
import { LOCAL_BENCHMARK_NAMES } from './local-benchmarks.js';
import { EVAL_ERROR_TYPES } from './worker-error-types.js';

/**
 * The Python evaluation worker's activities (workers/evaluation, task queue MOCKWORLD_EVAL_TASK_QUEUE):
 * their names, inputs and outputs. They are emitted as JSON Schema into schemas/json/eval/
 * (eval-json-schema.ts, with the defaults the worker fills in; `npx tsx schemas/emit-json-schema.ts`),
 * which the worker validates its inputs against (mockworld_eval/contract.py);
 * test/integration/evaluation.test.ts runs the two sides against each other.
 */
export const EVAL_ACTIVITY = {
  runTrial: 'eval.runTrial',
  listTasks: 'eval.listTasks',
  summarize: 'eval.summarize',
} as const;

/** Failure types of the evaluation worker that a retry cannot fix (worker-error-types.ts: no zod there). */
export { EVAL_ERROR_TYPES };

/** BFCL-V4 multi-turn categories (BFCL's own names). */
export const BFCL_CATEGORIES = [
  'multi_turn_base',
  'multi_turn_miss_func',
  'multi_turn_miss_param',
  'multi_turn_long_context',
] as const;
/** tau2-bench domains. */
export const TAU2_DOMAINS = ['airline', 'retail', 'telecom'] as const;

export const EvalBenchmarkSchema = z.enum(['bfcl', 'tau2']);
export type EvalBenchmark = z.infer<typeof EvalBenchmarkSchema>;

/**
 * Every benchmark an Evaluation runs: the official ones on the Python evaluation worker; math and
 * search (schemas/reasoning-evaluation.ts) and held-out synthetic tasks
 * (schemas/synthetic-evaluation.ts) and the registered file benchmarks (schemas/local-benchmarks.ts)
 * on the CPU worker. Their trials share eval_trials.
 */
export const EvaluationBenchmarkSchema = z.enum([
  'bfcl',
  'tau2',
  'math',
  'search',
  'synthetic',
  ...LOCAL_BENCHMARK_NAMES,
]);
export type EvaluationBenchmark = z.infer<typeof EvaluationBenchmarkSchema>;

/** An endpoint as the worker takes it: no key, only the name of the variable holding it. */
export const EvalEndpointSchema = z
  .object({
    baseUrl: z.string().min(1),
    model: z.string().min(1),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/)
      .optional(),
  })
  .strict();
export type EvalEndpoint = z.infer<typeof EvalEndpointSchema>;

export const EvalSamplingSchema = z
  .object({
    temperature: z.number().min(0).max(2),
    topP: z.number().gt(0).max(1).optional(),
    maxTokens: z.number().int().min(1).optional(),
  })
  .strict();

/** Default wall-clock bound of one attempt of a trial, in minutes. */
export const DEFAULT_TRIAL_TIMEOUT_MINUTES = 30;

/**
 * Wall-clock bound of one attempt of a trial, in seconds: past it the trial is ended and stored
 * with reward 0, termination `time_limit` and the reason; the model clients never wait longer.
 * Not part of a trial's config hash: it decides only whether a stuck trial ends.
 */
export const TrialWallSecondsSchema = z
  .number()
  .int()
  .min(1)
  .describe(
    "Wall-clock bound of one attempt of the trial, in seconds (the Evaluation spec's trialTimeoutMinutes).",
  );

export const TrialInputSchema = z
  .object({
    evaluationId: z.string().min(1),
    benchmark: EvalBenchmarkSchema,
    group: z.string().min(1).describe('BFCL category or tau2 domain.'),
    taskId: z.string().min(1),
    trial: z.number().int().min(0),
    trials: z.number().int().min(1),
    policy: EvalEndpointSchema,
    sampling: EvalSamplingSchema,
    user: EvalEndpointSchema.optional(),
    userSampling: EvalSamplingSchema.optional(),
    split: z.string().optional(),
    maxSteps: z.number().int().min(1).optional(),
    maxErrors: z.number().int().min(1).optional(),
    seed: z.number().int().optional(),
    wallSeconds: TrialWallSecondsSchema.optional(),
  })
  .strict();
export type TrialInput = z.infer<typeof TrialInputSchema>;

export const TrialSummarySchema = z.object({
  evaluationId: z.string(),
  benchmark: EvaluationBenchmarkSchema,
  group: z.string(),
  taskId: z.string(),
  trial: z.number().int(),
  reward: z.number(),
  termination: z.string(),
  steps: z.number().int(),
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  failure: z.string().nullable(),
  stored: z.boolean(),
});
export type TrialSummary = z.infer<typeof TrialSummarySchema>;

export const ListTasksInputSchema = z
  .object({
    benchmark: EvalBenchmarkSchema,
    group: z.string(),
    split: z.string().optional(),
    taskIds: z.array(z.string()).optional(),
    limit: z.number().int().min(1).optional(),
  })
  .strict();
export type ListTasksInput = z.infer<typeof ListTasksInputSchema>;
export interface ListTasksResult {
  readonly taskIds: string[];
  readonly packages: Record<string, string>;
  readonly data: Record<string, string>;
}

export const SummarizeInputSchema = z
  .object({
    evaluationId: z.string().min(1),
    compareWith: z.string().optional(),
    bootstrapSamples: z.number().int().min(100).max(100_000).optional(),
    confidence: z.number().gt(0).lt(1).optional(),
    seed: z.number().int().describe("The bootstrap's seed (the worker uses 0).").optional(),
  })
  .strict();
export type SummarizeInput = z.infer<typeof SummarizeInputSchema>;

const interval = z.tuple([z.number(), z.number()]);

/** What eval.summarize returns (mockworld_eval/metrics.py defines each number). */
export const EvaluationMetricsSchema = z.object({
  evaluationId: z.string(),
  confidence: z.number(),
  bootstrapSamples: z.number(),
  trials: z.number(),
  groups: z.array(
    z.object({
      benchmark: EvaluationBenchmarkSchema,
      group: z.string(),
      tasks: z.number(),
      trials: z.number(),
      k: z.number(),
      equalTrials: z.boolean(),
      avgAtK: z.number(),
      avgAtKCi: interval,
      passHatK: z.record(z.string(), z.number()),
      passHatKCi: z.record(z.string(), interval),
      terminations: z.record(z.string(), z.number()),
      modelErrors: z.number(),
      promptTokens: z.number(),
      completionTokens: z.number(),
      configHashes: z.number(),
    }),
  ),
  /**
   * BFCL-V4 multi-turn overall: the unweighted mean of the four categories; with one missing it is
   * N/A (accuracy and ci null, the missing ones named), never the mean of those present.
   */
  bfclOverall: z
    .object({
      categories: z.array(z.string()),
      complete: z.boolean(),
      missing: z.array(z.string()).default([]),
      accuracy: z.number().nullable(),
      ci: interval.nullable(),
    })
    .nullable(),
  comparison: z
    .object({
      against: z.string(),
      groups: z.array(
        z.object({
          benchmark: EvaluationBenchmarkSchema,
          group: z.string(),
          tasks: z.number(),
          difference: z.number(),
          ci: interval,
          pValue: z
            .number()
            .optional()
            .describe(
              'Two-sided paired sign-flip permutation test of no difference (absent in older summaries).',
            ),
        }),
      ),
    })
    .nullable(),
});
export type EvaluationMetrics = z.infer<typeof EvaluationMetricsSchema>;

/** The evaluation worker's activities, called by name on its task queue. */
export interface EvalActivities {
  'eval.runTrial'(input: TrialInput): Promise<TrialSummary>;
  'eval.listTasks'(input: ListTasksInput): Promise<ListTasksResult>;
  'eval.summarize'(input: SummarizeInput): Promise<EvaluationMetrics>;
}
