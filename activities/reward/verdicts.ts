import { z } from 'zod';
import type { Rubric } from '../../schemas/synthesis-records.js';
import type { RubricVerdicts } from './reward.js';

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

/** A judge's answer: exactly one verdict per rubric item, in any order of index. */
export interface Judgement {
  readonly forbidden: ReadonlyArray<{ index: number; violated: boolean; evidence: string }>;
  readonly subGoals: ReadonlyArray<{ index: number; achieved: boolean }>;
  readonly requiredInteractions: ReadonlyArray<{ index: number; satisfied: boolean }>;
}

/**
 * The judge's output contract for one rubric. Each list must have exactly as many entries as its
 * rubric list (`minItems` = `maxItems` in the JSON schema, so constrained decoders cannot miss
 * one), and the indices of a list must be 0..n-1 (an enum, so they cannot leave the range either),
 * each once; a violated forbidden behaviour needs
 * evidence. A wrong count fails validation inside the model layer, so the answer gets its one
 * repair call and, if still wrong, a recorded rejection ({@link StructuredOutputRejectedError}):
 * never a silently padded or cut verdict list. No transform, so the schema converts to JSON
 * schema; {@link verdictsOf} reads the verdicts in rubric order.
 */
export function judgementSchema(rubric: Rubric): z.ZodType<Judgement> {
  return z
    .object({
      forbidden: z.array(forbiddenVerdict(rubric.forbidden.length)).length(rubric.forbidden.length),
      subGoals: z.array(subGoalVerdict(rubric.subGoals.length)).length(rubric.subGoals.length),
      requiredInteractions: z
        .array(interactionVerdict(rubric.requiredInteractions.length))
        .length(rubric.requiredInteractions.length),
    })
    .superRefine((value, ctx) => {
      for (const key of ['forbidden', 'subGoals', 'requiredInteractions'] as const) {
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

/** The judgement with every list sorted by index, i.e. in rubric order (what is stored). */
export function sortedJudgement(judgement: Judgement): Judgement {
  return {
    forbidden: byIndex(judgement.forbidden),
    subGoals: byIndex(judgement.subGoals),
    requiredInteractions: byIndex(judgement.requiredInteractions),
  };
}

function byIndex<T extends { readonly index: number }>(verdicts: readonly T[]): T[] {
  return [...verdicts].sort((a, b) => a.index - b.index);
}

/** The booleans the reward is computed from, in rubric order. */
export function verdictsOf(judgement: Judgement): RubricVerdicts {
  const sorted = sortedJudgement(judgement);
  return {
    forbiddenViolated: sorted.forbidden.map((v) => v.violated),
    subGoalsAchieved: sorted.subGoals.map((v) => v.achieved),
    interactionsSatisfied: sorted.requiredInteractions.map((v) => v.satisfied),
  };
}
