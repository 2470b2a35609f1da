import { ANSWER_MATCH_SCHEMA_NAME, AnswerMatchSchema } from '../../schemas/reasoning-correctness.js';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import { normalizeAnswer } from './normalize.js';

/** Ledger role of the judge's calls (and the `X-Mockworld-Role` the test model server sees). */
export const ANSWER_JUDGE_ROLE = 'answer-judge';

const SYSTEM_PROMPT =
  'You are a strict grader. You decide whether an answer to a question means the same as the ' +
  'reference answer, and answer with JSON only.';

/** Whether `answer` equals the gold answer or one of its aliases, once both are normalized. */
export function exactMatch(answer: string, gold: string, aliases: readonly string[] = []): boolean {
  const normalized = normalizeAnswer(answer);
  return (
    normalized !== '' && [gold, ...aliases].some((reference) => normalizeAnswer(reference) === normalized)
  );
}

/** What the judge needs for one answer. */
export interface AnswerJudgeCall {
  readonly models: ModelClient;
  readonly judge: ModelRole;
  readonly runId: string;
  readonly question: string;
  readonly gold: string;
  readonly answer: string;
  readonly signal?: AbortSignal;
  /** The ledger role; default {@link ANSWER_JUDGE_ROLE} (controls are billed apart). */
  readonly role?: string;
}

/**
 * The LLM judge's verdict on a search answer that is not an exact match (the seed judged free-form
 * search answers for semantic consistency with the ground truth). A cached call: the same answer
 * to the same question is judged once. A judge that fails (output invalid after the model layer's
 * one repair, retries exhausted) throws: a response is never given a default score.
 */
export async function judgeAnswer(
  call: AnswerJudgeCall,
): Promise<{ equivalent: boolean; reason: string; cacheKey: string }> {
  const { value, cacheKey } = await call.models.structured(
    {
      endpoint: resolveEndpoint(call.judge.endpoint),
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        {
          role: 'user',
          content: [
            `Question: ${call.question}`,
            `Reference answer: ${call.gold}`,
            `Answer to grade: ${call.answer}`,
            '',
            'Is the answer to grade equivalent to the reference answer: the same entity, number, date or ' +
              'fact? Differences in wording, spelling, abbreviation or added correct detail do not matter; ' +
              'a different, less specific or hedged answer (several candidates) is not equivalent.',
            'Reply with {"equivalent": true or false, "reason": "<one sentence>"}.',
          ].join('\n'),
        },
      ],
      sampling: call.judge.sampling,
      runId: call.runId,
      role: call.role ?? ANSWER_JUDGE_ROLE,
      signal: call.signal,
    },
    AnswerMatchSchema,
    ANSWER_MATCH_SCHEMA_NAME,
  );
  return { ...value, cacheKey };
}
