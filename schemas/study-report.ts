/**
 * The study report's input records (the analysis layer of the scaling study), declared once in
 * zod (types are inferred). The study workflow's report activity maps its database rows into
 * these; `renderStudyReport` validates its input with {@link StudyReportInputSchema} at the
 * boundary and trusts it inside.
 */
import { z } from 'zod';

/** The matched-budget buckets B ≡ q·r of seed §6.1 (pool Q_q, r responses per question). */
export const MATCHED_BUDGETS = [4, 8, 16, 32] as const;
/** One matched-budget bucket B. */
export type MatchedBudget = (typeof MATCHED_BUDGETS)[number];

/** A score is a fraction in [0, 1] (mean@k: mean fraction correct over k samples per question). */
const Fraction = z.number().min(0).max(1);

/** One evaluated SFT run: budget r, training seed, score. */
export const ScoreSampleSchema = z.object({
  /** Per-question response budget r. */
  r: z.number().int().positive(),
  /** Training seed of the SFT run (the seed uses n = 3 per cell). */
  seed: z.number().int().nonnegative(),
  /** mean@k of the run, as a fraction in [0, 1]. */
  score: Fraction,
});
export type ScoreSample = z.infer<typeof ScoreSampleSchema>;

/**
 * Intrinsic scalars of a protocol's SFT pool (§7.1), as fractions; null when not measured or not
 * defined (e.g. no question with two responses). `poolR` says at which budget's pool they were
 * measured (the seed reports embedding selection at r = 8).
 */
export const IntrinsicSummarySchema = z.object({
  /** Mean pairwise token-set Jaccard distance across the retained responses per question. */
  jaccardDistance: Fraction.nullable().default(null),
  /** Share of admitted training responses whose final answer is wrong. */
  correctnessNoise: Fraction.nullable().default(null),
  /** Share of wrong → check → fix traces in the pool. */
  rewriteShare: Fraction.nullable().default(null),
  /** The budget r of the pool these were measured on; null when not stated. */
  poolR: z.number().int().positive().nullable().default(null),
});
export type IntrinsicSummary = z.infer<typeof IntrinsicSummarySchema>;

/** One protocol's r-sweep (all runs of all budgets) and its intrinsic metrics. */
export const ProtocolCurveSchema = z.object({
  /** Protocol id, e.g. `rs`, `temp-0.6`, `persona`; unique within a report. */
  protocol: z.string().min(1),
  /** Human-readable name for tables and legends; defaults to `protocol`. */
  label: z.string().min(1).optional(),
  /** Every evaluated run of the sweep. */
  samples: z.array(ScoreSampleSchema).min(1),
  intrinsic: IntrinsicSummarySchema.optional(),
});
export type ProtocolCurve = z.infer<typeof ProtocolCurveSchema>;

/** One run of the matched-budget grid (§6.1): pool Q_q, budget r, training seed, score. */
export const MatchedBudgetSampleSchema = z
  .object({
    /** Pool size in quarters: 1 (Q1), 2 (Q2), 4 (Q4). */
    q: z.union([z.literal(1), z.literal(2), z.literal(4)]),
    r: z.number().int().positive(),
    seed: z.number().int().nonnegative(),
    score: Fraction,
  })
  .refine((s) => (MATCHED_BUDGETS as readonly number[]).includes(s.q * s.r), {
    message: `q·r must be a matched budget B ∈ {${MATCHED_BUDGETS.join(', ')}}`,
  });
export type MatchedBudgetSample = z.infer<typeof MatchedBudgetSampleSchema>;

/** Everything one study report shows. */
export const StudyReportInputSchema = z
  .object({
    /** Report heading, e.g. the run id and domain. */
    title: z.string().min(1),
    /** k of mean@k: the samples per test question each score averages (seed: 8). */
    samplesPerQuestion: z.number().int().positive().default(8),
    /** The RS reference protocol id that gaps are measured against. */
    referenceProtocol: z.string().min(1).default('rs'),
    /** Held-out protocol: fit on r ≤ trainMaxR, forecast targetR (seed: 16 → 32). */
    forecast: z
      .object({
        trainMaxR: z.number().int().positive().default(16),
        targetR: z.number().int().positive().default(32),
      })
      .default({ trainMaxR: 16, targetR: 32 })
      .refine((f) => f.targetR > f.trainMaxR, { message: 'targetR must exceed trainMaxR' }),
    curves: z.array(ProtocolCurveSchema).min(1),
    /** Optional matched-budget grid (§6.1). */
    matchedBudget: z.array(MatchedBudgetSampleSchema).optional(),
  })
  .superRefine((input, ctx) => {
    const seen = new Set<string>();
    input.curves.forEach((curve, i) => {
      if (seen.has(curve.protocol))
        ctx.addIssue({
          code: 'custom',
          path: ['curves', i, 'protocol'],
          message: `duplicate protocol ${curve.protocol}`,
        });
      seen.add(curve.protocol);
    });
  });
/** The report input as the caller writes it (defaults optional). */
export type StudyReportInput = z.input<typeof StudyReportInputSchema>;
/** The report input after validation (defaults filled). */
export type StudyReportData = z.output<typeof StudyReportInputSchema>;

/** One response of a protocol's SFT pool, as the intrinsic metrics read it. */
export const PoolResponseSchema = z.object({
  questionId: z.string().min(1),
  /** The response text (the whole trace). */
  text: z.string(),
  /** Whether its final answer matches the gold answer; null when it was not judged. */
  correct: z.boolean().nullable(),
  /** Whether it is a wrong → check → fix rewrite trace (trace-level repair). */
  rewrite: z.boolean(),
});
export type PoolResponse = z.infer<typeof PoolResponseSchema>;
