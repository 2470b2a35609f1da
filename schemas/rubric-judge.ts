/**
 * The rubric judge of GRPO training (seed §3.3): what one judge activity is given, and the
 * structured answer the judge model must give for a task's rubric.
 */
import { z } from 'zod';
import { ModelEndpointSchema, SamplingSchema, type Sampling } from './model-endpoint.js';
import { RUBRIC_LISTS } from './rubric-rules.js';
import type { Rubric } from './synthesis-records.js';
import { TemplatesSchema } from './templates.js';

/**
 * Sampling of a judge role that sets none: greedy, so the same transcript gets the same verdicts,
 * with room for one verdict per item of the largest rubrics plus evidence quotes.
 */
export const DEFAULT_JUDGE_SAMPLING: Sampling = { temperature: 0, topP: 1, maxTokens: 2048 };

/** One episode to judge: ids and settings only (it travels in a Temporal payload). */
export const JudgeInputSchema = z
  .object({
    episodeId: z.string().min(1).describe('The finished episode (rollout) to judge.'),
    taskId: z.string().min(1).describe('Its task, whose rubric is used; must match the episode.'),
    judge: z
      .object({
        endpoint: ModelEndpointSchema.optional(),
        sampling: SamplingSchema.default(DEFAULT_JUDGE_SAMPLING),
      })
      .strict()
      .describe('The judge model role; unset sampling = temperature 0 (DEFAULT_JUDGE_SAMPLING).'),
    runId: z.string().min(1).describe('Workflow id of the run that pays for the judge call (usage ledger).'),
    templates: TemplatesSchema.default({ version: 'v1', overrides: {} }).describe(
      'Template choice of the run; the `judge` stage is used.',
    ),
    draw: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        "Which draw of the judge's answer this is (the call's sample index): a redraw after a malformed " +
          'answer is a new call, never the cached one.',
      ),
    policyVersion: z
      .string()
      .min(1)
      .default('base')
      .describe(
        'Weights behind the judge endpoint (model cache key). Pass the policy version when the judge ' +
          'shares its endpoint with the policy being trained (the embedded model on a laptop).',
      ),
  })
  .strict();

/** A judge input as a caller writes it; a spec's `ModelRole` fits `judge`. */
export type JudgeInputData = z.input<typeof JudgeInputSchema>;
/** A validated judge input. */
export type JudgeInput = z.infer<typeof JudgeInputSchema>;

/** Name of the judge's structured output (the `json_schema` name sent to the endpoint). */
export const JUDGEMENT_SCHEMA_NAME = 'judgement';

/** Longest evidence quote accepted for a forbidden behaviour. */
export const MAX_EVIDENCE_CHARS = 300;

/** Verdict index into a rubric list of `n` items: an enum, so constrained decoders stay in range. */
const indexBelow = (n: number) =>
  n > 0 ? z.literal(Array.from({ length: n }, (_, i) => i)) : z.number().int().min(0); // n = 0: no item to index

/** The judge's verdict on one forbidden behaviour. */
const forbiddenVerdict = (n: number) =>
  z.object({
    index: indexBelow(n),
    violated: z.boolean(),
    evidence: z
      .string()
      .max(MAX_EVIDENCE_CHARS)
      .describe('Short quote from the transcript; "" if not violated.'),
  });

/** The judge's verdict on one sub-goal. */
const subGoalVerdict = (n: number) => z.object({ index: indexBelow(n), achieved: z.boolean() });

/** The judge's verdict on one required user interaction. */
const interactionVerdict = (n: number) => z.object({ index: indexBelow(n), satisfied: z.boolean() });

/**
 * The verdicts of a rubric list by position, as a constrained decoder is asked to write them (the
 * JSON schema's `prefixItems`): verdict i has index i; a violated forbidden behaviour a quote, a
 * respected one "". Validation stays order-free; the decoder can only write answers that pass it.
 */
function positional(n: number, verdict: (i: number) => z.ZodType): { prefixItems: unknown[] } {
  return {
    prefixItems: Array.from({ length: n }, (_, i) => {
      const { $schema: _drop, ...schema } = z.toJSONSchema(verdict(i)) as Record<string, unknown>;
      return schema;
    }),
  };
}

const forbiddenAt = (i: number) =>
  z.union([
    z.object({
      index: z.literal(i),
      violated: z.literal(true),
      evidence: z.string().min(1).max(MAX_EVIDENCE_CHARS),
    }),
    z.object({ index: z.literal(i), violated: z.literal(false), evidence: z.literal('') }),
  ]);
const subGoalAt = (i: number) => z.object({ index: z.literal(i), achieved: z.boolean() });
const interactionAt = (i: number) => z.object({ index: z.literal(i), satisfied: z.boolean() });

/**
 * The judge's output contract for one rubric (built per task, hence a function). Each list must
 * have exactly as many entries as its rubric list (`minItems` = `maxItems` in the JSON schema, so
 * constrained decoders cannot miss one), and the indices of a list must be 0..n-1 (an enum, so
 * they cannot leave the range either), each once; a violated forbidden behaviour needs evidence.
 * A wrong count fails validation inside the model layer, so the answer gets its one repair call
 * and, if still wrong, a recorded rejection (`StructuredOutputRejectedError`): never a silently
 * padded or cut verdict list. No transform, so the schema converts to JSON schema; the reward
 * activity reads the verdicts in rubric order.
 */
export function judgementSchema(rubric: Rubric) {
  return z
    .object({
      forbidden: z
        .array(forbiddenVerdict(rubric.forbidden.length))
        .length(rubric.forbidden.length)
        .meta(positional(rubric.forbidden.length, forbiddenAt)),
      subGoals: z
        .array(subGoalVerdict(rubric.subGoals.length))
        .length(rubric.subGoals.length)
        .meta(positional(rubric.subGoals.length, subGoalAt)),
      requiredInteractions: z
        .array(interactionVerdict(rubric.requiredInteractions.length))
        .length(rubric.requiredInteractions.length)
        .meta(positional(rubric.requiredInteractions.length, interactionAt)),
    })
    .superRefine((value, ctx) => {
      for (const key of RUBRIC_LISTS) {
        const expected = rubric[key].length;
        const seen = new Set<number>();
        value[key].forEach((verdict, i) => {
          if (seen.has(verdict.index)) {
            ctx.addIssue({
              code: 'custom',
              path: [key, i, 'index'],
              message: `index ${verdict.index} is repeated; use each of 0..${expected - 1} once`,
            });
          }
          seen.add(verdict.index);
        });
      }
      value.forbidden.forEach((verdict, i) => {
        if (verdict.violated && verdict.evidence.trim() === '') {
          ctx.addIssue({
            code: 'custom',
            path: ['forbidden', i, 'evidence'],
            message: 'a violated forbidden behaviour needs a quote from the transcript as evidence',
          });
        }
      });
    });
}

/** A judge's answer: exactly one verdict per rubric item, in any order of index. */
export type Judgement = z.infer<ReturnType<typeof judgementSchema>>;
