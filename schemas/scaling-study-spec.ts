import { z } from 'zod';
import { judgeControlsSchema } from './judge-controls.js';
import { PolicyBaseSchema } from './grpo-spec.js';
import {
  ModelEndpointSchema,
  ModelRoleSchema,
  PolicySamplingSchema,
  RunBudgetSchema,
} from './model-endpoint.js';
import { PresetSchema } from './presets.js';
import { TrainerStepFields } from './trainer-step.js';
import { runNameField } from './run-name.js';

/**
 * The SFT of a student: epochs, a cosine learning-rate schedule with linear warm-up
 * (activities/study/grid.ts sftLearningRate), weight decay, examples per optimizer step and the
 * sequence length. A study's cells train with it, and so does an SftTraining run.
 */
export const SftSettingsSchema = z
  .object({
    epochs: z.number().int().min(1).max(100).default(8),
    // Sent to the trainer as each step's lr, weight_decay and max_seq_len: ranges from its contract.
    learningRate: TrainerStepFields.lr.gt(0).default(5e-6),
    minLearningRate: TrainerStepFields.lr
      .default(5e-7)
      .describe('The cosine schedule ends here (0 allowed).'),
    warmupRatio: z.number().min(0).max(0.5).default(0.05).describe('Share of steps with linear warm-up.'),
    weightDecay: TrainerStepFields.weight_decay.default(0.1),
    globalBatch: z.number().int().min(1).max(4096).default(32).describe('Examples per optimizer step.'),
    maxSeqLen: TrainerStepFields.max_seq_len.min(16).max(131_072).default(4096),
  })
  .strict();

/** The SFT settings a study uses when its spec gives none. */
export const SFT_SETTINGS_DEFAULTS = {
  epochs: 8,
  learningRate: 5e-6,
  minLearningRate: 5e-7,
  warmupRatio: 0.05,
  weightDecay: 0.1,
  globalBatch: 32,
  maxSeqLen: 4096,
} as const;

/**
 * Synthesis protocols of seed 002 (Sec. 6–7, App. 11.3). Each changes only p; (Q, T) stay fixed.
 * `rs` is plain rejection sampling, the reference every other protocol is compared with.
 */
export const PROTOCOLS = [
  'rs',
  'temperature-0.6',
  'temperature-0.001',
  'embedding-selection',
  'persona',
  'judge-free',
  'judge-free-prompt-aligned',
  'trace-repair',
  'trace-repair-revised-only',
  'question-synthesis',
] as const;
export const ProtocolSchema = z.enum(PROTOCOLS);
export type Protocol = z.infer<typeof ProtocolSchema>;

/** Nested pool sizes of source expansion: q quarters of the full seed pool (Q1 ⊂ Q2 ⊂ Q4). */
export const POOL_QUARTERS = [1, 2, 4] as const;

const powerOfTwo = z
  .number()
  .int()
  .min(1)
  .max(1024)
  .refine((n) => (n & (n - 1)) === 0, 'must be a power of two');

/**
 * A list of budgets: each a power of two, in increasing order without repeats (a repeated r would
 * name the same cell twice; an unsorted list reads as a different sweep than it runs).
 */
const increasing = (list: readonly number[]) => list.every((r, i) => i === 0 || r > list[i - 1]!);
const INCREASING = 'must be increasing, without repeats';
const budgetList = z.array(powerOfTwo).min(1).refine(increasing, INCREASING);

const role = (temperature: number, maxTokens: number) =>
  ModelRoleSchema.default({ sampling: { temperature, topP: 1, maxTokens } });

/**
 * A synthetic-data scaling study (seed 002): one source (Q, T), the protocols to audit, response
 * budgets r, training seeds, one SFT run per (protocol, pool, r, seed) cell and mean@k evaluation,
 * then P(r) = P∞ − A·r^−α fits and a report. Defaults are the seed's.
 */
export const ScalingStudySpecSchema = z
  .object({
    kind: z.literal('ScalingStudy'),
    preset: PresetSchema,
    budgetUsd: RunBudgetSchema.optional(),
    name: runNameField('study', 60),
    questions: z
      .object({
        seedPool: z
          .string()
          .min(1)
          .describe('JSONL of {"id","question","answer","domain","options"?}: the source Q.'),
        testSet: z.string().min(1).describe('JSONL of held-out test questions (same fields) for mean@k.'),
      })
      .strict(),
    teacher: role(1.2, 8192).describe('T: the teacher; its temperature is the RS temperature (seed: 1.2).'),
    judge: role(0, 16).describe('Correctness judge at temperature 0 (seed App. 11.3).'),
    exactMatch: z
      .boolean()
      .default(true)
      .describe(
        'Decide numeric and multiple-choice answers by a deterministic exact match and ask the judge ' +
          'only about the rest (fewer judge calls); false: the judge grades every answer, as the seed does.',
      ),
    judgeControls: judgeControlsSchema(
      "each judged question's reference and a wrong answer",
      'before its next cell',
    ),
    student: z
      .object({
        base: PolicyBaseSchema,
        endpoint: ModelEndpointSchema.describe(
          'Policy server in multi-run mode: the request model names the cell run (workers/trainer/README.md).',
        ),
      })
      .strict(),
    rejectionSampling: z
      .object({
        acceptedPerQuestion: z
          .number()
          .int()
          .min(1)
          .max(1024)
          .default(32)
          .describe('R: correct responses to collect.'),
        maxAttemptsPerQuestion: z
          .number()
          .int()
          .min(1)
          .max(100_000)
          .nullable()
          .default(128)
          .describe(
            'Attempts per question at most; null: until R are correct, as the seed samples (a question ' +
              'the teacher never answers correctly is then sampled until the study is cancelled).',
          ),
        attemptsPerWave: z
          .number()
          .int()
          .min(1)
          .max(256)
          .default(8)
          .describe('Teacher samples drawn at once per question.'),
      })
      .strict()
      .default({ acceptedPerQuestion: 32, maxAttemptsPerQuestion: 128, attemptsPerWave: 8 }),
    budgets: budgetList.max(16).default([1, 2, 4, 8, 16, 32]).describe('Per-question budgets r.'),
    trainingSeeds: z
      .number()
      .int()
      .min(1)
      .max(16)
      .default(3)
      .describe('SFT runs per cell configuration (seed: 3).'),
    protocols: z.array(ProtocolSchema).min(1).default(['rs']),
    sourceExpansion: z
      .object({
        buckets: z
          .array(z.union([z.literal(4), z.literal(8), z.literal(16), z.literal(32)]))
          .min(1)
          .refine(increasing, INCREASING)
          .default([4, 8, 16, 32])
          .describe("The seed's matched budgets B = q·r (q = 4, 2, 1 quarters of Q)."),
      })
      .strict()
      .optional()
      .describe('Matched-budget buckets B = q·r over nested pools Q1 ⊂ Q2 ⊂ Q4 (seed Sec. 6).'),
    questionSynthesis: z
      .object({
        perSeed: z
          .number()
          .int()
          .min(1)
          .max(64)
          .default(4)
          .describe('Evolved candidates drawn per seed question.'),
        budgets: budgetList.default([1, 2, 4, 8]),
        maxSimilarity: z.number().gt(0).max(1).default(0.7).describe('Token-set Jaccard similarity filter.'),
      })
      .strict()
      .default({ perSeed: 4, budgets: [1, 2, 4, 8], maxSimilarity: 0.7 }),
    temperatures: z
      .object({ low: z.number().min(0).max(2).default(0.6), greedy: z.number().min(0).max(2).default(0.001) })
      .strict()
      .default({ low: 0.6, greedy: 0.001 })
      .describe('Sampling temperatures of the temperature-0.6 and temperature-0.001 protocols.'),
    personas: z
      .string()
      .min(1)
      .optional()
      .describe('Persona JSONL ({"id","persona"}) for the persona protocol.'),
    embeddings: ModelEndpointSchema.optional().describe('Embeddings endpoint for embedding-selection.'),
    sft: SftSettingsSchema.default(SFT_SETTINGS_DEFAULTS),
    evaluation: z
      .object({
        samples: z.number().int().min(1).max(64).default(8).describe('k of mean@k (seed: 8).'),
        sampling: PolicySamplingSchema.default({ temperature: 0.7, topP: 1, maxTokens: 4096 }).describe(
          "The student's sampling (seed: temperature 0.7). maxTokens 4096, the seed's SFT sequence length: " +
            'the teacher writes up to 8192 tokens, and a cap that cuts worked answers before their final ' +
            'line scores them wrong (answers cut at it are counted per cell).',
        ),
      })
      .strict()
      .default({ samples: 8, sampling: { temperature: 0.7, topP: 1, maxTokens: 4096 } }),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(32)
      .describe('Questions sampled / cells trained at once.'),
    gpuTaskQueue: z.string().min(1).default('mockworld-gpu'),
    seed: z.number().int().min(0).default(0).describe('Seeds nested subsets, data order and persona choice.'),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const maxBudget = Math.max(...spec.budgets);
    if (spec.rejectionSampling.acceptedPerQuestion < maxBudget) {
      ctx.addIssue({
        code: 'custom',
        path: ['rejectionSampling', 'acceptedPerQuestion'],
        message: `must be at least the largest budget (${maxBudget}): the set at budget r is the first r accepted`,
      });
    }
    if (spec.protocols.includes('persona') && !spec.personas) {
      ctx.addIssue({ code: 'custom', path: ['personas'], message: 'required by the persona protocol' });
    }
    if (spec.protocols.includes('embedding-selection') && !spec.embeddings) {
      ctx.addIssue({
        code: 'custom',
        path: ['embeddings'],
        message: 'required by the embedding-selection protocol',
      });
    }
    const accepted = spec.rejectionSampling.acceptedPerQuestion;
    const largestBucket = Math.max(0, ...(spec.sourceExpansion?.buckets ?? []));
    if (largestBucket > accepted) {
      ctx.addIssue({
        code: 'custom',
        path: ['sourceExpansion', 'buckets'],
        message: `bucket ${largestBucket} needs r = ${largestBucket} on Q1, more than acceptedPerQuestion (${accepted})`,
      });
    }
    if (spec.protocols.includes('question-synthesis')) {
      const matched = 4 * Math.max(...spec.questionSynthesis.budgets);
      if (matched > accepted) {
        ctx.addIssue({
          code: 'custom',
          path: ['questionSynthesis', 'budgets'],
          message: `the matched-budget reference needs RS at r = ${matched}, more than acceptedPerQuestion (${accepted})`,
        });
      }
    }
  });

/** Validated scaling-study spec. */
export type ScalingStudySpec = z.infer<typeof ScalingStudySpecSchema>;
