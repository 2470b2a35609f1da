import type pg from 'pg';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { StructuredOutputRejectedError } from '../llm/errors.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import { ensureJudgeControls } from './judge-controls.js';
import { judgeResponse } from './judge.js';
import { REPAIR_SCHEMA_NAME, RepairOutputSchema } from '../../schemas/trace-repair.js';
import { composeRepairTrace, repairPrompt } from './protocols/repair.js';
import { questionById } from './questions.js';

/** Ledger role of trace-repair calls. */
export const REPAIRER_ROLE = 'trace-repairer';

export interface RepairQuestionInput {
  readonly studyId: string;
  readonly questionId: string;
  readonly teacher: ModelRole;
  readonly judge: ModelRole;
  /** Only the first `upTo` judged RS attempts can enter a training set, so only those are repaired. */
  readonly upTo: number;
  /** The exact-match shortcut of the judge (ScalingStudy `exactMatch`); absent: on. */
  readonly exactMatch?: boolean;
}

/**
 * Trace repair (seed 002 Sec. 7): each wrong RS attempt among the first `upTo` judged is shown to the
 * teacher with the gold answer, which checks it and writes a fix; the trace wrong → check → fix
 * and the fix alone are stored with the judge's verdict on the fix (only correct fixes are
 * admitted). Already repaired attempts are skipped; the calls are cached.
 */
export async function repairQuestion(
  models: ModelClient,
  pool: pg.Pool,
  input: RepairQuestionInput,
): Promise<{ repaired: number; correct: number; rejected: number }> {
  const question = await questionById(pool, input.studyId, input.questionId);
  // The trace-repair cells at budget r take the first r *judged* RS attempts (an attempt whose
  // verdict failed is skipped), so the window repaired is the first `upTo` judged ones too.
  const { rows: wrong } = await pool.query<{ attempt: number; response: string }>(
    `SELECT a.attempt, a.response FROM (
       SELECT *, row_number() OVER (ORDER BY attempt) AS rank FROM study_attempts
        WHERE study_id = $1 AND stream = 'rs' AND question_id = $2 AND correct IS NOT NULL) a
      WHERE a.rank <= $3 AND a.correct = false
        AND NOT EXISTS (SELECT 1 FROM study_repairs r
                         WHERE r.study_id = a.study_id AND r.question_id = a.question_id AND r.attempt = a.attempt)
      ORDER BY a.attempt`,
    [input.studyId, input.questionId, input.upTo],
  );
  let correct = 0;
  let rejected = 0;
  let askedJudge = false;
  for (const { attempt, response } of wrong) {
    let repair;
    try {
      const prompt = await repairPrompt({
        question: question.question,
        options: question.options,
        gold: question.answer,
        wrongResponse: response,
      });
      repair = (
        await models.structured(
          {
            endpoint: resolveEndpoint(input.teacher.endpoint),
            messages: [{ role: 'user', content: prompt }],
            sampling: input.teacher.sampling,
            runId: input.studyId,
            role: REPAIRER_ROLE,
          },
          RepairOutputSchema,
          REPAIR_SCHEMA_NAME,
        )
      ).value;
    } catch (error) {
      if (!(error instanceof StructuredOutputRejectedError)) throw error;
      rejected++; // recorded in llm_rejections; the wrong attempt simply stays unrepaired
      continue;
    }
    const revised = composeRepairTrace('revised_only', response, repair);
    const verdict = await judgeResponse(models, {
      studyId: input.studyId,
      judge: input.judge,
      question,
      response: revised,
      exactMatch: input.exactMatch,
    });
    if (verdict.correct) correct++;
    askedJudge ||= verdict.judgedBy !== 'exact';
    await pool.query(
      `INSERT INTO study_repairs (study_id, question_id, attempt, trace, revised, correct)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [
        input.studyId,
        input.questionId,
        attempt,
        composeRepairTrace('wrong_check_fix', response, repair),
        revised,
        verdict.correct,
      ],
    );
  }
  if (askedJudge) {
    await ensureJudgeControls(models, pool, {
      studyId: input.studyId,
      judge: input.judge,
      questionIds: [input.questionId],
    });
  }
  return { repaired: wrong.length - rejected, correct, rejected };
}
