import { z } from 'zod';
import { EvaluationSpecSchema } from './evaluation-spec.js';

/**
 * Benchmarks a GrpoTraining run evaluates its own checkpoints on (issue 15 point 4): an Evaluation
 * spec's body without its policy, which is the run's step `step-N`, served as `<runId>@<N>` by a
 * policy server started with --any-run. Every field is the Evaluation spec's own schema, so what the
 * child Evaluation would refuse the training run refuses when it starts.
 */
const evaluation = EvaluationSpecSchema.shape;
const { tau2, bfcl, math, search, synthetic } = evaluation.benchmarks.shape;
// The checkpoint policy's `server` (the second policy form of an Evaluation spec).
const CheckpointServerSchema = evaluation.policy.options[1].shape.checkpoint.shape.server;

export const TrainingBenchmarksSchema = z
  .object({
    every: z
      .number()
      .int()
      .min(1)
      .describe('Iterations between benchmark evaluations; the last iteration is always evaluated.'),
    server: CheckpointServerSchema.describe(
      'The policy server (started with --any-run) the Evaluation asks for model "<runId>@<step>".',
    ),
    name: evaluation.name,
    sampling: evaluation.sampling,
    tau2,
    bfcl,
    math,
    search,
    synthetic,
    concurrency: evaluation.concurrency,
    trialTimeoutMinutes: evaluation.trialTimeoutMinutes,
    evalTaskQueue: evaluation.evalTaskQueue,
    compareWith: evaluation.compareWith,
    bootstrapSamples: evaluation.bootstrapSamples,
    confidence: evaluation.confidence,
  })
  .strict()
  .refine(
    (b) => [b.tau2, b.bfcl, b.math, b.search, b.synthetic].some((benchmark) => benchmark !== undefined),
    {
      message: 'name at least one benchmark (tau2, bfcl, math, search or synthetic)',
    },
  );

export type TrainingBenchmarks = z.infer<typeof TrainingBenchmarksSchema>;
