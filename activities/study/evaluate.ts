import type pg from 'pg';
import type { ModelEndpoint, ModelRole, Sampling } from '../../schemas/model-endpoint.js';
import { isOversized } from '../llm/answer-bounds.js';
import type { ModelClient } from '../llm/index.js';
import { gradeAnswer } from './judge.js';
import { controlTheJudge, judgeCheck, type JudgeCheck } from './judge-controls.js';
import { teacherPrompt } from './protocols/teacher-prompt.js';
import { questionsOf } from './questions.js';
import { storableText } from '../store/storable.js';

/** Ledger role of student calls during evaluation. */
export const STUDENT_ROLE = 'student';

export interface EvaluateCellInput {
  readonly studyId: string;
  readonly cellId: string;
  readonly trainerRunId: string;
  /** The applied SFT step evaluated (0: the base model, nothing was trained). */
  readonly policyStep: number;
  readonly student: ModelEndpoint;
  readonly sampling: Sampling;
  /** k of mean@k. */
  readonly samples: number;
  readonly judge: ModelRole;
  /** The exact-match shortcut of the judge (ScalingStudy `exactMatch`); absent: on. */
  readonly exactMatch?: boolean;
}

export interface CellEvaluation {
  /** mean@k: the mean fraction of the k samples judged correct, over test questions. */
  readonly score: number | null;
  readonly judged: number;
  readonly judgeFailures: number;
  /** Answers that stopped at `sampling.maxTokens` (graded as they are): a cap that cuts answers shows here. */
  readonly truncated: number;
  /** Who decided the cell's verdicts, and the judge's controls on the questions it was asked about. */
  readonly judgeCheck: JudgeCheck;
}

/**
 * mean@k of a cell's final checkpoint on the test set (seed 002 Sec. 4: k = 8 at temperature
 * 0.7), through the policy server that serves the cell's run pinned to its last step. Every
 * response and verdict is stored insert-if-absent and every call is cached by sample index and
 * policy version, so a retried evaluation pays nothing twice. Judge failures are recorded and
 * left out of the mean, never scored.
 */
export async function evaluateCell(
  models: ModelClient,
  pool: pg.Pool,
  input: EvaluateCellInput,
  onProgress: (done: number, total: number) => void = () => undefined,
): Promise<CellEvaluation> {
  const tests = await questionsOf(pool, input.studyId, 'test');
  const { rows: stored } = await pool.query<{ question_id: string; sample: number }>(
    'SELECT question_id, sample FROM study_evaluations WHERE study_id = $1 AND cell_id = $2',
    [input.studyId, input.cellId],
  );
  const have = new Set(stored.map((r) => `${r.question_id}\n${r.sample}`));
  const endpoint = {
    ...input.student,
    // The multi-run policy server serves the run named by the model, pinned to a step.
    model: input.policyStep > 0 ? `${input.trainerRunId}@${input.policyStep}` : input.trainerRunId,
  };
  const total = tests.length * input.samples;
  let done = have.size;
  await Promise.all(
    tests.flatMap((question) =>
      Array.from({ length: input.samples }, async (_, sample) => {
        if (have.has(`${question.questionId}\n${sample}`)) return;
        await evaluateSample(models, pool, input, endpoint, question, sample);
        onProgress(++done, total);
      }),
    ),
  );
  await controlTheJudge(models, pool, input, { cellId: input.cellId });
  const result = await cellScore(pool, input);
  await pool.query(
    `UPDATE study_cells SET score = $3, evaluated = $4, finished_at = now() WHERE study_id = $1 AND cell_id = $2`,
    [input.studyId, input.cellId, result.score, result.judged],
  );
  return result;
}

/** One sample of one test question: the student's answer, its verdict, stored (insert-if-absent). */
async function evaluateSample(
  models: ModelClient,
  pool: pg.Pool,
  input: EvaluateCellInput,
  endpoint: ModelEndpoint,
  question: Awaited<ReturnType<typeof questionsOf>>[number],
  sample: number,
): Promise<void> {
  const answer = await models.chat({
    endpoint,
    messages: [{ role: 'user', content: await teacherPrompt(question) }],
    sampling: input.sampling,
    sampleIndex: sample,
    policyVersion: `${input.trainerRunId}@step-${input.policyStep}`,
    runId: input.studyId,
    role: STUDENT_ROLE,
  });
  const { response, verdict } = await gradeAnswer(
    models,
    { studyId: input.studyId, judge: input.judge, question, exactMatch: input.exactMatch },
    answer.message.content,
  );
  const truncated = answer.finishReason === 'length' || isOversized(answer.finishReason);
  await pool.query(
    `INSERT INTO study_evaluations (study_id, cell_id, question_id, sample, response, correct, judged_by,
                                          truncated)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
    [
      input.studyId,
      input.cellId,
      question.questionId,
      sample,
      storableText(response),
      verdict.correct,
      verdict.judgedBy,
      truncated,
    ],
  );
}

/** The cell's mean@k, judged and failed counts and truncated answers, from its stored verdicts. */
async function cellScore(pool: pg.Pool, input: EvaluateCellInput): Promise<CellEvaluation> {
  const { rows } = await pool.query<{
    score: number | null;
    judged: number;
    failed: number;
    truncated: number;
  }>(
    `SELECT avg(per_question)::float8 AS score, sum(judged)::int AS judged, sum(failed)::int AS failed,
            sum(truncated)::int AS truncated FROM (
       SELECT avg(correct::int) AS per_question, count(correct) AS judged, count(*) - count(correct) AS failed,
              count(*) FILTER (WHERE truncated) AS truncated
         FROM study_evaluations WHERE study_id = $1 AND cell_id = $2 GROUP BY question_id) q`,
    [input.studyId, input.cellId],
  );
  return {
    score: rows[0]?.score ?? null,
    judged: rows[0]?.judged ?? 0,
    judgeFailures: rows[0]?.failed ?? 0,
    truncated: rows[0]?.truncated ?? 0,
    judgeCheck: await judgeCheck(pool, input.studyId, input.cellId),
  };
}
