import { z } from 'zod';
import { MAX_ANSWER_CHARS, ReasoningKindSchema } from './reasoning-correctness.js';

/** Longest seed question read, in characters. */
export const MAX_SEED_QUESTION_CHARS = 8_000;

/**
 * The reasoning section of a Synthesis spec (seed 000 §3.4): math and search problems the user
 * supplies, each rewritten by the teacher into a persona scenario, solved `solutions` times and
 * kept only when every final answer agrees (and agrees with the source answer when there is one).
 */
export const ReasoningSourceSchema = z
  .object({
    seeds: z
      .object({
        path: z
          .string()
          .min(1)
          .describe(
            'JSONL file of {"question", "answer"?, "kind": "math"|"search"} lines. Relative: as personas.path.',
          ),
        offset: z.number().int().min(0).default(0).describe('Skip this many valid problems.'),
      })
      .strict(),
    problems: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .describe('Problems to synthesize, in file order (fewer when the file has fewer valid lines).'),
    solutions: z
      .number()
      .int()
      .min(2)
      .max(8)
      .default(3)
      .describe('Teacher solutions per rewritten problem (seed: 3); kept only when all final answers agree.'),
    rewrite: z
      .boolean()
      .default(true)
      .describe('false: the seed question is asked as written (no persona rewrite, no rewrite call).'),
    keep: z
      .enum(['agreement', 'correct'])
      .default('agreement')
      .describe(
        "agreement (seed): kept when every final answer agrees (and with the seed's answer). correct: " +
          "rejection sampling, kept when at least one solution matches the seed's answer; only those are " +
          'demonstrations (SftTraining dataset.source reasoning). Needs seed answers.',
      ),
  })
  .strict();
export type ReasoningSource = z.infer<typeof ReasoningSourceSchema>;

/** One line of the seed file. */
export const SeedProblemSchema = z
  .object({
    question: z.string().trim().min(1).max(MAX_SEED_QUESTION_CHARS),
    answer: z.string().trim().min(1).max(MAX_ANSWER_CHARS).optional(),
    kind: ReasoningKindSchema,
  })
  .strict();
export type SeedProblem = z.infer<typeof SeedProblemSchema>;

/**
 * Why a problem was dropped: the rewrite was empty or too long; a solution had no final answer
 * the extractor could read; the solutions' answers are not all equivalent; they agree with each
 * other but not with the seed's answer.
 */
export const ReasoningDropReasonSchema = z.enum([
  'rewrite_failed',
  'unparseable_answer',
  'answers_disagree',
  'source_mismatch',
  'no_correct_solution',
]);
export type ReasoningDropReason = z.infer<typeof ReasoningDropReasonSchema>;

/** One teacher solution of a rewritten problem, as stored. */
export interface ReasoningSolution {
  readonly sampleIndex: number;
  readonly response: string;
  /** The extracted final answer; null when none could be read. */
  readonly answer: string | null;
  /** Under `keep: correct`: whether the answer matches the seed's (absent under `agreement`). */
  readonly correct?: boolean;
}

/** What synthesizing one problem ended with. */
export type ReasoningProblemResult =
  { readonly outcome: 'kept' } | { readonly outcome: 'rejected'; readonly reason: ReasoningDropReason };
