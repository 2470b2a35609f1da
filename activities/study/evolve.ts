import type pg from 'pg';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { StructuredOutputRejectedError } from '../llm/errors.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import { evolInstructMessages } from './protocols/evol-prompt.js';
import { EVOLVED_QUESTION_SCHEMA_NAME, EvolvedQuestionSchema } from '../../schemas/evolved-question.js';
import {
  checkEvolvedFormat,
  evolvedAsStudyQuestion,
  filterBySimilarity,
  type SimilarityCandidate,
} from './protocols/evolved-questions.js';
import { questionById } from './questions.js';

/** Ledger role of question-evolution calls. */
export const EVOLVER_ROLE = 'question-evolver';

export interface EvolveQuestionInput {
  readonly studyId: string;
  readonly questionId: string;
  readonly teacher: ModelRole;
  /** Candidates drawn (sample indices 0..perSeed-1). */
  readonly perSeed: number;
  readonly maxSimilarity: number;
}

/**
 * Question synthesis (seed 002 Sec. 6, App. 11.3): `perSeed` Evol-Instruct candidates of one seed
 * question, each through the format filter and the similarity filter (to its seed and to the
 * candidates kept before it). Kept ones become `evolved` questions (id `<seed>~evo<k>`, idx
 * seedIdx·perSeed + k, so order and ids never depend on timing); every refusal is recorded with
 * its reason. Idempotent: candidates are cached calls and rows are insert-if-absent.
 */
export async function evolveQuestion(
  models: ModelClient,
  pool: pg.Pool,
  input: EvolveQuestionInput,
): Promise<{ kept: number; rejected: Record<string, number> }> {
  const seed = await questionById(pool, input.studyId, input.questionId);
  const { rows } = await pool.query<{ idx: number }>(
    'SELECT idx FROM study_questions WHERE study_id = $1 AND question_id = $2',
    [input.studyId, input.questionId],
  );
  const seedIdx = rows[0]!.idx;
  const messages = await evolInstructMessages({
    question: seed.question,
    options: seed.options,
    answer: seed.answer,
    field: seed.domain,
    subfield: seed.domain,
    difficulty: 'similar to the original',
  });
  const rejected: Record<string, number> = {};
  const refuse = async (k: number, reason: string) => {
    rejected[reason] = (rejected[reason] ?? 0) + 1;
    await pool.query(
      `INSERT INTO study_question_rejections (study_id, source, line, reason) VALUES ($1, 'evolved', $2, $3)
       ON CONFLICT DO NOTHING`,
      [input.studyId, seedIdx * input.perSeed + k, `${input.questionId} candidate ${k}: ${reason}`],
    );
  };

  const candidates: (SimilarityCandidate & { k: number })[] = [];
  for (let k = 0; k < input.perSeed; k++) {
    try {
      const { value } = await models.structured(
        {
          endpoint: resolveEndpoint(input.teacher.endpoint),
          messages,
          sampling: input.teacher.sampling,
          sampleIndex: k,
          runId: input.studyId,
          role: EVOLVER_ROLE,
        },
        EvolvedQuestionSchema,
        EVOLVED_QUESTION_SCHEMA_NAME,
      );
      const format = checkEvolvedFormat(value, seed);
      if (format.ok) candidates.push({ seed, evolved: value, k });
      else await refuse(k, `${format.reason}: ${format.detail}`);
    } catch (error) {
      if (!(error instanceof StructuredOutputRejectedError)) throw error;
      await refuse(k, `model output rejected: ${error.message}`);
    }
  }

  const decisions = filterBySimilarity(candidates, input.maxSimilarity);
  let kept = 0;
  for (const [i, decision] of decisions.entries()) {
    const { evolved, k } = candidates[i]!;
    if (!decision.kept) {
      await refuse(k, `${decision.reason} (similarity ${decision.similarity.toFixed(2)})`);
      continue;
    }
    const question = evolvedAsStudyQuestion(evolved);
    await pool.query(
      `INSERT INTO study_questions (study_id, question_id, source, idx, domain, question, answer, options, parent_id)
       VALUES ($1, $2, 'evolved', $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      [
        input.studyId,
        `${input.questionId}~evo${k}`,
        seedIdx * input.perSeed + k,
        seed.domain,
        question.question,
        question.gold,
        JSON.stringify(question.options),
        input.questionId,
      ],
    );
    kept++;
  }
  return { kept, rejected };
}
