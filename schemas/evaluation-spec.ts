import { z } from 'zod';
import { credentialFreeUrl } from './url-credentials.js';
import { BFCL_CATEGORIES, DEFAULT_TRIAL_TIMEOUT_MINUTES, TAU2_DOMAINS } from './evaluation-contract.js';
import { markedJudgeControlsSchema } from './judge-controls.js';
import { ModelEndpointSchema, ModelRoleSchema } from './model-endpoint.js';
import {
  LOCAL_BENCHMARK_NAMES,
  LOCAL_BENCHMARK_SETTINGS,
  type LocalBenchmarkName,
} from './local-benchmarks.js';
import { BenchmarkFileSchema } from './reasoning-evaluation.js';
import { SandboxCapsSchema } from './reasoning-sandbox.js';
import { SearchBackendSchema } from './reasoning-search.js';
import { TemplatesSchema } from './templates.js';
import { SyntheticBenchmarkSchema } from './synthetic-evaluation.js';

/**
 * An evaluation of one policy on the seed's benchmarks: tau2-bench and BFCL-V4 multi-turn through
 * their official code (the Python evaluation worker), math and search problems from the user's
 * JSONL files with the real python and search tools (the CPU worker). Every (benchmark, category or domain, task,
 * trial) is one activity, run exactly once; the run ends with the benchmarks' own metrics.
 */

const EvalSamplingSchema = z
  .object({
    temperature: z
      .number()
      .min(0)
      .max(2)
      .default(0)
      .describe('Sampling temperature (tau2 and BFCL leaderboards: 0 or near it). Moves scores.'),
    topP: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe('tau2 only: BFCL\u2019s handler sends the temperature alone.'),
    maxTokens: z.number().int().min(1).max(131_072).optional().describe('tau2 only (see topP).'),
  })
  .strict();

/** The policy: an OpenAI-compatible endpoint, or a step of a training run served by the policy server. */
const PolicySchema = z.union([
  z
    .object({ endpoint: ModelEndpointSchema.describe('Any OpenAI-compatible endpoint serving the policy.') })
    .strict(),
  z
    .object({
      checkpoint: z
        .object({
          runId: z.string().min(1).describe('The training run (its workflow id).'),
          step: z.number().int().min(0).describe('The applied step to evaluate (0: the base model).'),
          server: z
            .object({
              baseUrl: credentialFreeUrl("name the key's variable in apiKeyEnv").describe(
                'A policy server started with --any-run (workers/trainer README).',
              ),
              apiKeyEnv: z
                .string()
                .regex(/^[A-Z_][A-Z0-9_]*$/)
                .optional(),
            })
            .strict(),
        })
        .strict()
        .describe('Served as model "<runId>@<step>", which the policy server never reloads.'),
    })
    .strict(),
]);

const taskSelection = {
  taskIds: z.array(z.string().min(1)).min(1).optional().describe('Only these tasks (each must exist).'),
  limit: z.number().int().min(1).optional().describe('Only the first N tasks of each category or domain.'),
};

const Tau2Schema = z
  .object({
    domains: z
      .array(z.enum(TAU2_DOMAINS))
      .min(1)
      .default([...TAU2_DOMAINS]),
    split: z
      .string()
      .min(1)
      .default('base')
      .describe('tau2 task split: base is airline 50, retail 114, telecom 114.'),
    trials: z
      .number()
      .int()
      .min(1)
      .max(32)
      .default(4)
      .describe('Trials per task: Avg@k and pass^k use them.'),
    userSimulator: z
      .object({ endpoint: ModelEndpointSchema, sampling: EvalSamplingSchema.default({ temperature: 0 }) })
      .strict()
      .describe('The user simulator (must support tool calling: the telecom user has tools). Moves scores.'),
    maxSteps: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(200)
      .describe('tau2 step limit (its CLI default 200).'),
    maxErrors: z.number().int().min(1).max(1_000).default(10),
    seed: z.number().int().default(300).describe('tau2 run seed; trial i gets the seed tau2 derives for it.'),
    ...taskSelection,
  })
  .strict();

const BfclSchema = z
  .object({
    categories: z
      .array(z.enum(BFCL_CATEGORIES))
      .min(1)
      .default([...BFCL_CATEGORIES]),
    trials: z.number().int().min(1).max(32).default(1).describe('BFCL scores one trial; more give Avg@k.'),
    ...taskSelection,
  })
  .strict();

/** Math or search: data sets of problems, each a group, run with the real tools (seed 000 Table 3). */
const ReasoningBenchmarkFields = {
  datasets: z
    .array(BenchmarkFileSchema)
    .min(1)
    .refine((files) => new Set(files.map((f) => f.name)).size === files.length, 'names must be distinct')
    .describe('The data sets, each a group of the run (e.g. aime24, hmmt25).'),
  trials: z
    .number()
    .int()
    .min(1)
    .max(32)
    .default(4)
    .describe('Trials per problem: Avg@k (the seed: Avg@4; Avg@6 for HMMT25 and AIME).'),
  maxTurns: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe('Policy turns per trial (tool calls in between).'),
  sandbox: SandboxCapsSchema.partial().optional().describe('Caps of the python tool per call.'),
  templates: TemplatesSchema.optional().describe(
    "The solve prompt (overrides.reasoningSolve), as the GRPO run's templates: evaluate a policy on the prompt it was trained with.",
  ),
  ...taskSelection,
};

const MathBenchmarkSchema = z.object(ReasoningBenchmarkFields).strict();

const SearchBenchmarkSchema = z
  .object({
    ...ReasoningBenchmarkFields,
    backend: SearchBackendSchema.describe(
      'The search tool: an offline collection or an HTTP search API (the seed: Google, top 5 snippets).',
    ),
    judge: ModelRoleSchema.describe(
      'Decides answers that are no exact match of the gold answer or an alias (the seed: an LLM judge).',
    ),
    judgeControls: markedJudgeControlsSchema(
      'per problem the judge decides, once per run: its reference answer and a wrong one',
    ),
  })
  .strict();

/** A family's entry in an Evaluation spec: its data sets, trials, task selection and settings. */
function localBenchmarkSpec<S extends z.ZodType>(settings: S) {
  return z
    .object({
      datasets: z
        .array(BenchmarkFileSchema)
        .min(1)
        .refine((files) => new Set(files.map((f) => f.name)).size === files.length, 'names must be distinct')
        .describe('The data sets, each a group of the run.'),
      trials: z.number().int().min(1).max(32).default(4).describe('Trials per problem: Avg@k.'),
      taskIds: z
        .array(z.string().min(1))
        .min(1)
        .optional()
        .describe('Only these problems (each must exist).'),
      limit: z.number().int().min(1).optional().describe('Only the first N problems of each data set.'),
      settings: settings.prefault({} as never),
    })
    .strict();
}

type LocalBenchmarkSpecs = {
  [K in LocalBenchmarkName]: z.ZodOptional<
    ReturnType<typeof localBenchmarkSpec<(typeof LOCAL_BENCHMARK_SETTINGS)[K]>>
  >;
};

/** `benchmarks.<name>` of an Evaluation spec, for every registered family. */
const LOCAL_BENCHMARK_SPECS = Object.fromEntries(
  LOCAL_BENCHMARK_NAMES.map((name) => [name, localBenchmarkSpec(LOCAL_BENCHMARK_SETTINGS[name]).optional()]),
) as LocalBenchmarkSpecs;

export const EvaluationSpecSchema = z
  .object({
    kind: z.literal('Evaluation'),
    name: z.string().min(1).max(80).default('evaluation').describe('Label shown in reports.'),
    policy: PolicySchema,
    sampling: EvalSamplingSchema.default({ temperature: 0 }),
    benchmarks: z
      .object({
        tau2: Tau2Schema.optional(),
        bfcl: BfclSchema.optional(),
        math: MathBenchmarkSchema.optional().describe('Math problems (a JSONL each), with the python tool.'),
        search: SearchBenchmarkSchema.optional().describe(
          'Search questions (a JSONL each), with search and python.',
        ),
        synthetic: SyntheticBenchmarkSchema.optional().describe(
          'Held-out synthetic tasks in the mock world, judged by their rubrics.',
        ),
        ...LOCAL_BENCHMARK_SPECS,
      })
      .strict()
      .refine((b) => Object.values(b).some((benchmark) => benchmark !== undefined), {
        message: 'name at least one benchmark',
      }),
    concurrency: z.number().int().min(1).max(256).default(4).describe('Trials in flight at once.'),
    trialTimeoutMinutes: z
      .number()
      .min(1)
      // Under the trial activities' 2-hour start-to-close timeout (workflows/evaluation-activities.ts).
      .max(110)
      .default(DEFAULT_TRIAL_TIMEOUT_MINUTES)
      .describe(
        'Wall-clock bound of one attempt of a trial, every benchmark: past it the trial is stored with reward 0, termination time_limit and the reason (a hung model ends here); the model clients never wait longer.',
      ),
    evalTaskQueue: z
      .string()
      .min(1)
      .default('mockworld-eval')
      .describe('Task queue of the evaluation worker.'),
    compareWith: z
      .string()
      .min(1)
      .optional()
      .describe('Another Evaluation run on the same tasks: the report adds the paired difference.'),
    bootstrapSamples: z.number().int().min(100).max(100_000).default(2000),
    confidence: z.number().gt(0).lt(1).default(0.95),
  })
  .strict();

/** Validated evaluation spec. */
export type EvaluationSpec = z.infer<typeof EvaluationSpecSchema>;
