/**
 * Rubric items checked from the trajectory without a model (issue 30 item 4): a rubric may attach a
 * rule to any of its items, and the rule's verdict replaces the judge's for that item. The judge is
 * asked only for the items without one, and every stored verdict says which checker produced it.
 * Pure: workflow code and the importer import this module.
 */
import { z } from 'zod';

/** A case-insensitive regular expression, as its source; refused at parse when it does not compile. */
const PatternSchema = z
  .string()
  .min(1)
  .max(200)
  .refine((source) => {
    try {
      new RegExp(source, 'i');
      return true;
    } catch {
      return false;
    }
  }, 'is not a valid regular expression')
  .describe('A regular expression, matched case-insensitively anywhere in the text.');

/** An argument value a call must carry: strings compare trimmed and case-insensitively. */
const ArgumentValueSchema = z.union([z.string(), z.number(), z.boolean()]);

/** What a rule looks for in a finished episode; it holds when the trajectory shows it. */
export const RubricRuleSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('called'),
      tool: z.string().min(1).max(64).describe('The tool the agent called.'),
      args: z
        .record(z.string().min(1), ArgumentValueSchema)
        .optional()
        .describe('Arguments the call must carry with these values (others may be present).'),
    })
    .strict()
    .describe('The agent called `tool`, in one call with every listed argument equal to its value.'),
  z
    .object({
      kind: z.literal('asked'),
      matches: PatternSchema,
    })
    .strict()
    .describe('The agent asked the user (an `ask_user` call) a question that matches `matches`.'),
  z
    .object({
      kind: z.literal('said'),
      matches: PatternSchema,
    })
    .strict()
    .describe("The agent's own text (not a tool call) matches `matches` in some message."),
]);
export type RubricRule = z.infer<typeof RubricRuleSchema>;

/** A list's rules by item position; a missing or null entry leaves that item to the judge. */
const RuleListSchema = z.array(RubricRuleSchema.nullable()).max(16);

/** The rules of a rubric, per list, aligned with the list's items. */
export const RubricChecksSchema = z
  .object({
    forbidden: RuleListSchema.optional(),
    subGoals: RuleListSchema.optional(),
    requiredInteractions: RuleListSchema.optional(),
  })
  .strict();
export type RubricChecks = z.infer<typeof RubricChecksSchema>;

/** The three rubric lists, in the order the judge and the reward read them. */
export const RUBRIC_LISTS = ['forbidden', 'subGoals', 'requiredInteractions'] as const;
export type RubricList = (typeof RUBRIC_LISTS)[number];

/** Which checker produced a stored verdict: the LLM judge, or a rule (by its kind). */
export type VerdictChecker = 'judge' | `rule:${RubricRule['kind']}`;

/**
 * Where a rubric's rules do not line up with its items: a rule list longer than its item list.
 * Empty when they do. The importer refuses such a task and the judge calls it ungradable.
 */
export function misalignedChecks(rubric: {
  readonly forbidden: readonly string[];
  readonly subGoals: readonly string[];
  readonly requiredInteractions: readonly string[];
  readonly checks?: RubricChecks | undefined;
}): string[] {
  return RUBRIC_LISTS.flatMap((list) => {
    const rules = rubric.checks?.[list]?.length ?? 0;
    const items = rubric[list].length;
    return rules > items ? [`checks.${list} has ${rules} rules for ${items} items`] : [];
  });
}
