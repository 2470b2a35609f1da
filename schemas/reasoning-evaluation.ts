import { z } from 'zod';
import { EvalEndpointSchema, EvalSamplingSchema, TrialWallSecondsSchema } from './evaluation-contract.js';
import { ModelRoleSchema } from './model-endpoint.js';
import { MAX_ANSWER_CHARS } from './reasoning-correctness.js';
import { SandboxCapsSchema } from './reasoning-sandbox.js';
import { SearchBackendSchema } from './reasoning-search.js';
import { TemplatesSchema } from './templates.js';

/**
 * Math and search benchmarks of an Evaluation run (seed 000 Table 3: AIME24/25, HMMT25,
 * OlympiadBench; the search sets): a JSONL the user supplies, run on the CPU worker with the real
 * `python` tool (and `search`), each answer scored by correctness as the seed does (math-verify for
 * math, exact match then the judge for search). Trials are stored in eval_trials beside tau2's and
 * BFCL's, so the same metrics (Avg@k, pass^k, intervals, paired comparisons) cover them.
 */
export const REASONING_BENCHMARKS = ['math', 'search'] as const;
export const ReasoningBenchmarkSchema = z.enum(REASONING_BENCHMARKS);
export type ReasoningBenchmark = z.infer<typeof ReasoningBenchmarkSchema>;

/** Longest question read from a benchmark file, in characters. */
export const MAX_BENCHMARK_QUESTION_CHARS = 20_000;

/**
 * One line of a benchmark file. Other fields (a solution, a source URL) are ignored; `id` defaults
 * to `line-<n>` (1-based), so the file's order names its problems.
 */
export const BenchmarkProblemSchema = z.object({
  id: z
    .union([z.string().trim().min(1).max(200), z.number().int()])
    .transform(String)
    .optional(),
  question: z.string().trim().min(1).max(MAX_BENCHMARK_QUESTION_CHARS),
  answer: z
    .union([z.string(), z.number()])
    .transform(String)
    .pipe(z.string().trim().min(1).max(MAX_ANSWER_CHARS)),
  aliases: z.array(z.string().trim().min(1).max(MAX_ANSWER_CHARS)).max(20).default([]),
});

/** One data set of a math or search benchmark: a group of the run (e.g. aime24). */
export const BenchmarkFileSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,40}$/, 'letters, digits, _ . - (1-40)')
      .describe('The group name in reports, e.g. aime24.'),
    path: z
      .string()
      .min(1)
      .describe(
        'JSONL of {"id"?, "question", "answer", "aliases"?} lines; relative: as the spec’s other files.',
      ),
  })
  .strict();

/** What listing a file benchmark's group takes, beside its benchmark's name. */
export const fileListFields = {
  group: z.string().min(1),
  path: z.string().min(1),
  taskIds: z.array(z.string()).optional(),
  limit: z.number().int().min(1).optional(),
};

/** What one (problem, trial) of a file benchmark's group takes, beside its benchmark's name. */
export const fileTrialFields = {
  evaluationId: z.string().min(1),
  group: z.string().min(1),
  taskId: z.string().min(1),
  trial: z.number().int().min(0),
  trials: z.number().int().min(1),
  path: z.string().min(1),
  policy: EvalEndpointSchema,
  sampling: EvalSamplingSchema,
  wallSeconds: TrialWallSecondsSchema.optional(),
};

/** Listing a group's problems (`listReasoningBenchmarkTasks`). */
export const ReasoningListInputSchema = z
  .object({ benchmark: ReasoningBenchmarkSchema, ...fileListFields })
  .strict();
export type ReasoningListInput = z.infer<typeof ReasoningListInputSchema>;

/** One (problem, trial) of a math or search group (`runReasoningBenchmarkTrial`). */
export const ReasoningTrialInputSchema = z
  .object({
    benchmark: ReasoningBenchmarkSchema,
    ...fileTrialFields,
    maxTurns: z.number().int().min(1).max(64),
    sandbox: SandboxCapsSchema.partial().optional(),
    templates: TemplatesSchema.optional(),
    /** Search: the backend of the `search` tool, and the judge of answers that are no exact match. */
    search: SearchBackendSchema.optional(),
    judge: ModelRoleSchema.optional(),
  })
  .strict();
export type ReasoningTrialInput = z.input<typeof ReasoningTrialInputSchema>;
