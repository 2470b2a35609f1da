import type pg from 'pg';
import type { ModelRole } from '../../schemas/model-endpoint';
import { recordRejection } from '../llm/call-store';
import { resolveEndpoint } from '../llm/default-endpoint';
import type { ModelClient } from '../llm';
import { exactMatch, extractFinalAnswer } from './protocols/answers';
import { parseJudgeVerdict } from './protocols/judge-verdict';
import { judgePrompt } from './protocols/judge-prompt';
import type { StudyQuestion } from './questions';

/** Ledger role of correctness-judge calls. */
export const STUDY_JUDGE_ROLE = 'study-judge';

/** A response's verdict: decided by the exact-match fast path, the LLM judge, or not at all. */
export interface Verdict {
  readonly finalAnswer: string | null;
  /** null when the judge's output could not be read twice: recorded, never a score. */
  readonly correct: boolean | null;
  readonly judgedBy: 'exact' | 'llm' | 'judge-failed';
  readonly judgeKey: string | null;
}

/**
 * Judges one response against the gold answer (seed App. 11.3): a deterministic exact match for
 * numeric and multiple-choice answers first; otherwise the LLM judge at temperature 0 answers
 * CORRECT/INCORRECT. An unreadable verdict gets one reminder; if that is unreadable too, the
 * output is recorded in `llm_rejections` and the verdict is `judge-failed` (never a score).
 */
export async function judgeResponse(
  models: ModelClient,
  pool: pg.Pool,
  input: { studyId: string; judge: ModelRole; question: StudyQuestion; response: string },
): Promise<Verdict> {
  const { question, response } = input;
  const finalAnswer = extractFinalAnswer(response, question.options ?? [])?.text ?? null;
  const fast = exactMatch(question, question.answer, response);
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
  const firstText = first.message.content ?? '';
  const verdict = parseJudgeVerdict(firstText);
  if (verdict !== null) return { finalAnswer, correct: verdict, judgedBy: 'llm', judgeKey: first.cacheKey };

  const reminder = await models.chat({
    ...call,
    messages: [
      ...messages,
      { role: 'assistant', content: firstText },
      { role: 'user', content: 'Reply with exactly one word: CORRECT or INCORRECT.' },
    ],
  });
  const retried = parseJudgeVerdict(reminder.message.content ?? '');
  if (retried !== null)
    return { finalAnswer, correct: retried, judgedBy: 'llm', judgeKey: reminder.cacheKey };
  await recordRejection(pool, {
    cacheKey: first.cacheKey,
    runId: input.studyId,
    role: STUDY_JUDGE_ROLE,
    schemaName: 'study-judge-verdict',
    reason: 'the judge answered neither CORRECT nor INCORRECT, also after a reminder',
    rawOutput: `${firstText}\n---\n${reminder.message.content ?? ''}`,
  });
  return { finalAnswer, correct: null, judgedBy: 'judge-failed', judgeKey: first.cacheKey };
}
