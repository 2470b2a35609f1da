import { z } from 'zod';

/**
 * The exact-answer benchmark family: one question per JSONL line, answered by the policy in one
 * turn without tools, scored 1 when its final answer equals the gold answer or an alias after
 * normalization. The example of docs/adding-a-benchmark.md.
 */
export const ExactAnswerSettingsSchema = z
  .object({
    system: z
      .string()
      .min(1)
      .max(4_000)
      .default('Answer the question. End your reply with a last line of the form "Answer: <answer>".')
      .describe('The system message of every trial.'),
    caseSensitive: z.boolean().default(false).describe('Compare answers with their letter case.'),
  })
  .strict();
export type ExactAnswerSettings = z.output<typeof ExactAnswerSettingsSchema>;
