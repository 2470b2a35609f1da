/**
 * One line of an exported `tasks.jsonl` as `mockworld import` reads it (docs/synthesis.md "Dataset format"):
 * the fields GRPO training needs, with the bounds synthesis holds its own tasks to
 * (FuzzyTaskSchema, RubricDraftSchema). The tools are checked as function specs by the importer,
 * which names each bad tool by its place in the line.
 */
import { z } from 'zod';
import { BOUNDS } from './bounds.js';
import { misalignedChecks, RUBRIC_LISTS } from './rubric-rules.js';
import { RubricSchema } from './synthesis-records.js';

/** The instruction: the prompt's last user message with text (the export's prompt ends with it). */
export const instructionOf = (prompt: readonly { role: string; content?: string | null }[]) =>
  prompt.filter((m) => m.role === 'user' && m.content?.trim()).at(-1)?.content ?? undefined;

const RubricItem = z.string().trim().min(1).max(500);

/** One line of an exported `tasks.jsonl`. */
export const ExportedTaskSchema = z
  .object({
    task_id: z.string().min(1).max(500),
    persona_id: z.string().min(1).max(500).optional(),
    prompt: z
      .array(z.object({ role: z.string(), content: z.string().nullish() }).loose())
      .refine((prompt) => instructionOf(prompt) !== undefined, 'needs a user message (the instruction)')
      .refine(
        (prompt) => (instructionOf(prompt)?.length ?? 0) <= BOUNDS.instructionChars,
        `the instruction is over ${BOUNDS.instructionChars} characters`,
      ),
    tools: z.array(z.unknown()).max(15),
    hidden_context: z.string().trim().min(1).max(BOUNDS.hiddenContextChars),
    rubric: RubricSchema.extend({
      forbidden: z.array(RubricItem).max(8),
      subGoals: z.array(RubricItem).max(16),
      requiredInteractions: z.array(RubricItem).max(8),
    })
      .refine(
        (rubric) => rubric.subGoals.length + rubric.requiredInteractions.length > 0,
        'needs a sub-goal or a required interaction: the reward averages their fractions',
      )
      .superRefine((rubric, ctx) => {
        for (const message of misalignedChecks(rubric))
          ctx.addIssue({ code: 'custom', message, path: ['checks'] });
      }),
    workflow: z.array(z.string()).max(16).optional(),
  })
  .superRefine((task, ctx) => {
    // A `called` rule about a tool the task does not offer could never hold: a typo, refused here.
    const names = new Set([
      'ask_user',
      ...task.tools.map((tool) => (tool as { function?: { name?: unknown } } | null)?.function?.name),
    ]);
    for (const list of RUBRIC_LISTS) {
      task.rubric.checks?.[list]?.forEach((rule, i) => {
        if (rule?.kind === 'called' && !names.has(rule.tool))
          ctx.addIssue({
            code: 'custom',
            message: `calls ${rule.tool}, which is not one of the task's tools`,
            path: ['rubric', 'checks', list, i, 'tool'],
          });
      });
    }
  });
/** A validated exported task line. */
export type ExportedTask = z.infer<typeof ExportedTaskSchema>;
