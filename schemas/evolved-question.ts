/**
 * The output contract of the scaling study's Evol-Instruct question synthesis (seed §6.1.0.2) and
 * the reasons its format and similarity filters record when they refuse an evolved question.
 */
import { z } from 'zod';

/** Name of the evolved question's structured output (the `json_schema` name sent to the endpoint). */
export const EVOLVED_QUESTION_SCHEMA_NAME = 'evolved_question';

/**
 * The JSON the Evol-Instruct prompt asks for, field for field. It checks shape only; the meaning
 * (letter in range, answer text copied from the options, ...) is the format filter's, so that a
 * bad question is a recorded format rejection rather than a failed model call.
 */
export const EvolvedQuestionSchema = z
  .object({
    question: z.string().describe('The new, self-contained question, without its options.'),
    options: z.array(z.string()).describe('The options, in order; the first is option A.'),
    answer_letter: z.string().describe('The letter of the one correct option (A for the first).'),
    answer_text: z.string().describe('The text of the correct option, copied verbatim from options.'),
    explanation: z.string().describe('Why the chosen option is correct.'),
  })
  .strict();
/** One evolved question as the model wrote it. */
export type EvolvedQuestion = z.infer<typeof EvolvedQuestionSchema>;

/** Why the format filter refused an evolved question. */
export const FormatRejectionSchema = z.enum([
  'empty_question',
  'option_count',
  'empty_option',
  'duplicate_options',
  'answer_letter',
  'answer_text_mismatch',
  'empty_explanation',
]);
export type FormatRejection = z.infer<typeof FormatRejectionSchema>;

/** Why the similarity filter refused an evolved question. */
export const SimilarityRejectionSchema = z.enum([
  'no_tokens',
  'similar_to_seed',
  'duplicate_of_kept',
  'similar_to_kept',
]);
export type SimilarityRejection = z.infer<typeof SimilarityRejectionSchema>;
