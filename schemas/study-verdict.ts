/** Verdicts of the scaling study's correctness check: the deterministic fast path and the LLM judge. */
import { z } from 'zod';

/** The verdict of a deterministic comparison: `undecided` means the LLM judge must decide. */
export const FastVerdictSchema = z.enum(['correct', 'incorrect', 'undecided']);
export type FastVerdict = z.infer<typeof FastVerdictSchema>;

/** Name the study judge's JSON reminder answer is asked and its rejections are recorded under. */
export const STUDY_JUDGE_VERDICT_SCHEMA_NAME = 'study-judge-verdict';

/** The study judge's answer to the reminder that asks for its verdict as JSON. */
export const StudyJudgeVerdictSchema = z.object({ verdict: z.enum(['CORRECT', 'INCORRECT']) });
export type StudyJudgeVerdict = z.infer<typeof StudyJudgeVerdictSchema>;
