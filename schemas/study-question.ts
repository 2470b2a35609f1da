import { z } from 'zod';

/** Longest question or answer accepted, in characters; longer ones are refused, never cut. */
export const MAX_QUESTION_CHARS = 16_000;

/** One line of a scaling study's seed-pool or test-set JSONL file. */
export const QuestionLineSchema = z
  .object({
    id: z.union([z.string().trim().min(1).max(200), z.number().int()]).transform(String),
    question: z.string().trim().min(1).max(MAX_QUESTION_CHARS),
    answer: z.union([z.string().trim().min(1).max(1_000), z.number()]).transform(String),
    domain: z.string().trim().min(1).max(100),
    options: z.array(z.string().trim().min(1).max(2_000)).min(2).max(26).optional(),
  })
  .loose();
export type QuestionLine = z.infer<typeof QuestionLineSchema>;
