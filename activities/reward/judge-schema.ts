import { z } from 'zod';
import type { Rubric } from '../../schemas/synthesis-records';
import type { RubricVerdicts } from './reward';

/** Name of the judge's structured output (the `json_schema` name sent to the endpoint). */
export const JUDGEMENT_SCHEMA_NAME = 'judgement';

/** Longest evidence quote accepted for a forbidden behaviour. */
export const MAX_EVIDENCE_CHARS = 300;

const Index = z.number().int().min(0);

/** The judge's verdict on one forbidden behaviour. */
const ForbiddenVerdictSchema = z.object({
  index: Index,
  violated: z.boolean(),
  evidence: z
    .string()
    .max(MAX_EVIDENCE_CHARS)
    .describe('Short quote from the transcript; "" if not violated.'),
});

/** The judge's verdict on one sub-goal. */
const SubGoalVerdictSchema = z.object({ index: Index, achieved: z.boolean() });

/** The judge's verdict on one required user interaction. */
const InteractionVerdictSchema = z.object({ index: Index, satisfied: z.boolean() });

/** A judge's answer: exactly one verdict per rubric item, in any order of index. */
export interface Judgement {
  readonly forbidden: ReadonlyArray<z.infer<typeof ForbiddenVerdictSchema>>;
  readonly subGoals: ReadonlyArray<z.infer<typeof SubGoalVerdictSchema>>;
  readonly requiredInteractions: ReadonlyArray<z.infer<typeof InteractionVerdictSchema>>;
}

/**
 * The judge's output contract for one rubric. Each list must have exactly as many entries as its
 * rubric list (`minItems` = `maxItems` in the JSON schema, so constrained decoders cannot miss
 * one), and the indices of a list must be 0..n-1, each once; a violated forbidden behaviour needs
 * evidence. A wrong count fails validation inside the model layer, so the answer gets its one
 * repair call and, if still wrong, a recorded rejection ({@link StructuredOutputRejectedError}):
 * never a silently padded or cut verdict list. No transform, so the schema converts to JSON
 * schema; {@link verdictsOf} reads the verdicts in rubric order.
 */
export function judgementSchema(rubric: Rubric): z.ZodType<Judgement> {
  return z
    .object({
      forbidden: z.array(ForbiddenVerdictSchema).length(rubric.forbidden.length),
      subGoals: z.array(SubGoalVerdictSchema).length(rubric.subGoals.length),
      requiredInteractions: z.array(InteractionVerdictSchema).length(rubric.requiredInteractions.length),
    })
    .superRefine((value, ctx) => {
      for (const key of ['forbidden', 'subGoals', 'requiredInteractions'] as const) {
        const expected = rubric[key].length;
        const seen = new Set<number>();
        value[key].forEach((verdict, i) => {
          if (verdict.index >= expected || seen.has(verdict.index)) {
            ctx.addIssue({
              code: 'custom',
              path: [key, i, 'index'],
              message: `index ${verdict.index} is out of range or repeated; use each of 0..${expected - 1} once`,
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
