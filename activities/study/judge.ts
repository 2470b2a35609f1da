import type { ModelRole } from '../../schemas/model-endpoint.js';
import { STUDY_JUDGE_VERDICT_SCHEMA_NAME, StudyJudgeVerdictSchema } from '../../schemas/study-verdict.js';
import { StructuredOutputRejectedError } from '../llm/errors.js';
import { BOUNDS } from '../../schemas/bounds.js';
import { cutWithMarker } from '../llm/answer-bounds.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import { exactMatch, extractFinalAnswer } from './protocols/answers.js';
import { parseJudgeVerdict } from './protocols/judge-verdict.js';
import { judgePrompt } from './protocols/judge-prompt.js';
import type { StudyQuestion } from './questions.js';

/** Ledger role of correctness-judge calls. */
export const STUDY_JUDGE_ROLE = 'study-judge';
const REMINDER_MIN_TOKENS = 32;

/** A response's verdict: decided by the exact-match fast path, the LLM judge, or not at all. */
export interface Verdict {
  readonly finalAnswer: string | null;
  /** null when the judge's verdict could not be read, also after the reminder: recorded, never a score. */
  readonly correct: boolean | null;
  readonly judgedBy: 'exact' | 'llm' | 'judge-failed';
  readonly judgeKey: string | null;
}

/** What {@link judgeResponse} needs besides the response. */
type GradeInput = Omit<Parameters<typeof judgeResponse>[1], 'response'>;

/**
 * A model's answer cut to the stored bound (a longer one is graded on what fits, the cut marked),
 * and its verdict: what sampling and evaluation store.
 */
export async function gradeAnswer(
  models: ModelClient,
  input: GradeInput,
  content: string | null | undefined,
): Promise<{ response: string; verdict: Verdict }> {
  const response = cutWithMarker(content ?? '', BOUNDS.studyResponseBytes);
  return { response, verdict: await judgeResponse(models, { ...input, response }) };
}

/**
 * Judges one response against the gold answer (seed App. 11.3): with `exactMatch` (the default),
 * a deterministic exact match for numeric and multiple-choice answers first; otherwise — and for
 * every answer when it is off, as the seed's LLM judge grades every answer — the LLM judge at
 * temperature 0 answers CORRECT/INCORRECT. An unreadable verdict gets one reminder asking for it as JSON (repaired once
 * like every structured output); if that is unreadable too, its output is recorded in
 * `llm_rejections` and the verdict is `judge-failed` (never a score).
 */
export async function judgeResponse(
  models: ModelClient,
  input: {
    studyId: string;
    judge: ModelRole;
    question: StudyQuestion;
    response: string;
    /** The exact-match shortcut (ScalingStudy `exactMatch`); default on. */
    exactMatch?: boolean;
  },
): Promise<Verdict> {
  const { question } = input;
  // Bounded here too (sampling and evaluation cut it before storing): the judge's prompt quotes it.
  const response = cutWithMarker(input.response, BOUNDS.studyResponseBytes);
  const finalAnswer = extractFinalAnswer(response, question.options ?? [])?.text ?? null;
  const fast = input.exactMatch === false ? 'undecided' : exactMatch(question, question.answer, response);
  if (fast !== 'undecided')
    return { finalAnswer, correct: fast === 'correct', judgedBy: 'exact', judgeKey: null };

  const call = {
    endpoint: resolveEndpoint(input.judge.endpoint),
    sampling: input.judge.sampling,
    runId: input.studyId,
    role: STUDY_JUDGE_ROLE,
  };
  const prompt = await judgePrompt({
    question: question.question,
    options: question.options,
    gold: question.answer,
    response,
  });
  const messages = [{ role: 'user' as const, content: prompt }];
  const first = await models.chat({ ...call, messages });
  // A verdict is a word: text over the bound is not read as one (the reminder asks again, echoing it cut).
  const fullText = first.message.content ?? '';
  const firstText = cutWithMarker(fullText, BOUNDS.studyVerdictBytes);
  const verdict = firstText === fullText ? parseJudgeVerdict(firstText) : null;
  if (verdict !== null) return { finalAnswer, correct: verdict, judgedBy: 'llm', judgeKey: first.cacheKey };

  // The reminder asks for the verdict under a JSON schema, so a server with guided decoding can
  // only answer one of the two; an answer still unreadable after the repair is recorded, not scored.
  try {
    const reminder = await models.structured(
      {
        ...call,
        // Room for the JSON even where the judge's own answers are capped at a word or two.
        sampling: { ...call.sampling, maxTokens: Math.max(call.sampling.maxTokens, REMINDER_MIN_TOKENS) },
        messages: [
          ...messages,
          { role: 'assistant', content: firstText },
          {
            role: 'user',
            content: 'Give your verdict as JSON: {"verdict": "CORRECT"} or {"verdict": "INCORRECT"}.',
          },
        ],
      },
      StudyJudgeVerdictSchema,
      STUDY_JUDGE_VERDICT_SCHEMA_NAME,
    );
    return {
      finalAnswer,
      correct: reminder.value.verdict === 'CORRECT',
      judgedBy: 'llm',
      judgeKey: reminder.cacheKey,
    };
  } catch (error) {
    if (!(error instanceof StructuredOutputRejectedError)) throw error;
    return { finalAnswer, correct: null, judgedBy: 'judge-failed', judgeKey: error.cacheKey };
  }
}
