import { z } from 'zod';
import { ModelRoleSchema, RunBudgetSchema } from './model-endpoint.js';
import { JudgeInputSchema } from './rubric-judge.js';

/**
 * A judge stability audit (seed 000 App. B, Figure 6): held-out trajectories of a GRPO run, at
 * chosen checkpoints, judged k times each by the rubric judge, and the spread of the k scores per
 * checkpoint. The trajectories are the run's held-out evaluation episodes (`evaluateEvery`); the
 * audit plays no new episode, it only judges again.
 */
export const JudgeAuditSpecSchema = z
  .object({
    kind: z.literal('JudgeAudit'),
    budgetUsd: RunBudgetSchema.optional(),
    trainingRunId: z
      .string()
      .min(1)
      .describe('Workflow id of the GrpoTraining run whose held-out evaluation episodes are judged again.'),
    checkpoints: z
      .array(z.number().int().min(0))
      .min(1)
      .max(1_000)
      .refine((steps) => new Set(steps).size === steps.length, 'must not repeat a step')
      .optional()
      .describe(
        'Policy steps (the N of step-N) whose held-out evaluation to audit; unset: every step the run evaluated.',
      ),
    tasks: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe(
        'Held-out tasks sampled (seeded), the same at every checkpoint (the seed: 100); fewer when the run has fewer.',
      ),
    k: z
      .number()
      .int()
      .min(2)
      .max(64)
      .default(6)
      .describe('Judgings of each trajectory (the seed repeats 6 times); a variance needs at least 2.'),
    judge: ModelRoleSchema.optional().describe(
      "The judge to audit; unset: the training run's own judge, as its stored spec names it.",
    ),
    seed: z.number().int().min(0).default(0).describe('Seed of the task sample.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(8)
      .describe('Trajectories judged at once (each judged k times in turn).'),
  })
  .strict();

/** Validated judge audit spec. */
export type JudgeAuditSpec = z.infer<typeof JudgeAuditSpecSchema>;

/** The score spread of one checkpoint: what `mockworld report` shows per row. */
export const CheckpointStabilitySchema = z.object({
  /** The policy step whose held-out trajectories were judged (`step-<policyStep>`). */
  policyStep: z.number().int().min(0),
  /** Trajectories audited at this checkpoint (one per sampled task). */
  trajectories: z.number().int().min(0),
  /** Judgings that gave a score. */
  scored: z.number().int().min(0),
  /** Judgings the judge failed (malformed after its repair): counted, never a score. */
  failures: z.number().int().min(0),
  /** Mean of every score at the checkpoint; null when none was scored. */
  meanScore: z.number().nullable(),
  /**
   * Mean over trajectories of the variance of its k scores (population variance, the mean squared
   * distance to the trajectory's own mean); trajectories with fewer than 2 scores are left out.
   */
  meanVariance: z.number().nullable(),
  /** Mean over the same trajectories of the standard deviation of their scores. */
  meanStd: z.number().nullable(),
  /** Trajectories with at least 2 scores, i.e. the ones the variance is averaged over. */
  trajectoriesWithVariance: z.number().int().min(0),
});
export type CheckpointStability = z.infer<typeof CheckpointStabilitySchema>;

/** What a JudgeAudit run returns and stores as its summary. */
export const JudgeAuditSummarySchema = z.object({
  trainingRunId: z.string(),
  k: z.number().int(),
  /** Judge model of the audit (the endpoint's model name). */
  judgeModel: z.string(),
  /** One row per audited checkpoint, by policy step. */
  checkpoints: z.array(CheckpointStabilitySchema),
});
export type JudgeAuditSummary = z.infer<typeof JudgeAuditSummarySchema>;

/** What an audit reads of the audited GrpoTraining run's stored spec (the rest of it is not read). */
export const AuditedRunSpecSchema = z.object({
  judge: JudgeInputSchema.shape.judge,
  templates: JudgeInputSchema.shape.templates,
});
