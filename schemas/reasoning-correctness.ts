import { z } from 'zod';
import { ModelRoleSchema } from './model-endpoint.js';

/**
 * Correctness rewards of reasoning tasks (activities/correctness; seed §3.4: math and search tasks
 * "evaluated by answer correctness"). Reward 1 or 0, stored with the answer extracted from the
 * response and how it was judged.
 */

/** The kinds of reasoning task. */
export const ReasoningKindSchema = z.enum(['math', 'search']);
export type ReasoningKind = z.infer<typeof ReasoningKindSchema>;

/** The longest final answer taken from a response; a longer one counts as no answer. */
export const MAX_ANSWER_CHARS = 2_000;

/** Input of the `scoreReasoningAnswers` activity: responses to one problem (e.g. a GRPO group). */
export const CorrectnessInputSchema = z
  .object({
    /** Workflow id of the run (the ledger of the judge's calls, the rewards' run). */
    runId: z.string().min(1).max(500),
    kind: ReasoningKindSchema,
    /** The problem as the policy saw it: the judge reads it. */
    question: z.string().min(1).max(20_000),
    /** The reference answer. */
    gold: z.string().trim().min(1).max(MAX_ANSWER_CHARS),
    /** Search: other names of the same answer that count as an exact match. */
    aliases: z.array(z.string().trim().min(1).max(MAX_ANSWER_CHARS)).max(20).default([]),
    /** Search: the LLM judge of semantic equivalence when no exact match (required for search). */
    judge: ModelRoleSchema.optional(),
    items: z
      .array(
        z
          .object({
            /** Id of this reward, derived from the workflow id and rollout: a retry finds it stored. */
            rewardId: z.string().min(1).max(500),
            /** The policy's final response (its last assistant message). */
            response: z.string().max(200_000),
          })
          .strict(),
      )
      .min(1)
      .max(64),
  })
  .strict();

export type CorrectnessInput = z.input<typeof CorrectnessInputSchema>;
export type CorrectnessInputData = z.infer<typeof CorrectnessInputSchema>;

/**
 * How a reward was decided. `math-verify`: the math verifier compared the answer with the gold
 * answer; `exact-match`: a search answer equal to the gold answer (or an alias) after
 * normalization; `judge`: the LLM judge decided a search answer's equivalence; `no-answer`: no
 * final answer could be extracted (reward 0).
 */
export const CorrectnessMethodSchema = z.enum(['math-verify', 'exact-match', 'judge', 'no-answer']);

/** One correctness reward. */
export const CorrectnessRewardSchema = z.object({
  rewardId: z.string(),
  reward: z.union([z.literal(0), z.literal(1)]),
  /** The final answer taken from the response; null when there was none. */
  extractedAnswer: z.string().nullable(),
  method: CorrectnessMethodSchema,
  /** Why: what the verifier parsed, the judge's reason, or why no answer was taken. */
  detail: z.string(),
});

export type CorrectnessReward = z.infer<typeof CorrectnessRewardSchema>;

/** The judge's answer on a search response. */
export const AnswerMatchSchema = z
  .object({
    equivalent: z.boolean(),
    reason: z.string().max(1_000),
  })
  .strict();

export const ANSWER_MATCH_SCHEMA_NAME = 'AnswerMatch';

/** One line the sandboxed math verifier (activities/correctness/python) prints per pair. */
export const MathVerdictSchema = z
  .object({
    index: z.int().nonnegative(),
    equivalent: z.boolean(),
    gold: z.string().nullable(),
    answer: z.string().nullable(),
    error: z.string().nullable(),
  })
  .strict();

export type MathVerdict = z.infer<typeof MathVerdictSchema>;
