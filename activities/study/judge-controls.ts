/**
 * Judge controls (issue 36): beside the real answers of every question the LLM judge is asked
 * about, it also grades two answers whose verdict is known — the question's own reference (it
 * must say CORRECT) and a wrong answer (it must say INCORRECT). Their verdicts are stored apart
 * and never enter a score; their pass rate says whether the judge's other verdicts can be
 * believed. A judge that accepts everything passes half of them.
 */
import type pg from 'pg';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import { judgeControlsGraded } from '../telemetry/metrics.js';
import { storableText } from '../store/storable.js';
import { judgeResponse } from './judge.js';
import { compactAnswer } from './protocols/math-text.js';
import { optionLetter, optionsOf } from './protocols/question-format.js';
import { parseNumericAnswer } from './protocols/numeric-answer.js';
import { resolveOption } from './protocols/answers.js';
import { studyQuestions, type StudyQuestion } from './questions.js';

export type ControlKind = 'reference' | 'wrong';

export interface ControlAnswer {
  readonly kind: ControlKind;
  readonly response: string;
  /** The verdict a judge that can be believed gives. */
  readonly expected: boolean;
}

const boxed = (answer: string) => `The final answer is \\boxed{${answer}}.`;

/** A wrong answer from the question itself (another option, another number); null for a text gold. */
function ownWrongAnswer(question: StudyQuestion): string | null {
  const options = optionsOf(question);
  const gold = options.length > 0 ? resolveOption(question.answer, options) : null;
  if (gold !== null) return optionLetter((gold + 1) % options.length);
  const value = parseNumericAnswer(question.answer);
  return value && !value.percent ? String(value.value + Math.max(1, Math.abs(value.value))) : null;
}

/**
 * A wrong answer to `question`: another option for a multiple-choice question, a different
 * number for a numeric gold, else the reference of another question of the study (`others`).
 */
export function wrongAnswer(question: StudyQuestion, others: readonly StudyQuestion[]): string {
  const own = ownWrongAnswer(question);
  if (own !== null) return own;
  const goldKey = compactAnswer(question.answer).toLowerCase();
  const other = others.find(
    (o) => o.questionId !== question.questionId && compactAnswer(o.answer).toLowerCase() !== goldKey,
  );
  return other?.answer ?? 'I do not know.';
}

/** The two control answers of a question. */
export function controlAnswers(question: StudyQuestion, others: readonly StudyQuestion[]): ControlAnswer[] {
  return [
    { kind: 'reference', response: boxed(question.answer), expected: true },
    { kind: 'wrong', response: boxed(wrongAnswer(question, others)), expected: false },
  ];
}

/**
 * Grades the controls of every question in `questionIds` that has none stored yet, with the
 * study's judge and no checker in front of it (a control tests the judge). Insert-if-absent, and
 * each judge call is cached like any other, so a retry pays nothing twice; the judge at
 * temperature 0 gives one verdict per control, so a question's controls are graded once per study.
 */
export async function ensureJudgeControls(
  models: ModelClient,
  pool: pg.Pool,
  input: { studyId: string; judge: ModelRole; questionIds: readonly string[] },
): Promise<void> {
  if (input.questionIds.length === 0) return;
  // Most calls find every control graded already: only those questions are read, and the whole
  // study only when a text gold needs another question's reference as its wrong answer.
  const { rows: graded } = await pool.query<{ question_id: string }>(
    `SELECT question_id FROM study_judge_controls WHERE study_id = $1 AND question_id = ANY($2)
      GROUP BY question_id HAVING count(*) >= 2`,
    [input.studyId, input.questionIds],
  );
  const done = new Set(graded.map((r) => r.question_id));
  const pendingIds = input.questionIds.filter((id) => !done.has(id));
  if (pendingIds.length === 0) return;
  const pending = await studyQuestions(pool, input.studyId, pendingIds);
  const all = pending.some((q) => ownWrongAnswer(q) === null)
    ? await studyQuestions(pool, input.studyId)
    : [];
  await Promise.all(
    pending.flatMap((question) =>
      controlAnswers(question, all).map(async (control) => {
        const verdict = await judgeResponse(models, {
          studyId: input.studyId,
          judge: input.judge,
          question,
          response: control.response,
          exactMatch: false,
        });
        const { rowCount } = await pool.query(
          `INSERT INTO study_judge_controls (study_id, question_id, kind, response, expected, verdict, judge_key)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
          [
            input.studyId,
            question.questionId,
            control.kind,
            storableText(control.response),
            control.expected,
            verdict.correct,
            verdict.judgeKey,
          ],
        );
        const passed = verdict.correct === control.expected;
        if (rowCount) judgeControlsGraded.inc({ judge: 'study', outcome: passed ? 'passed' : 'failed' });
      }),
    ),
  );
}

/**
 * The questions whose stored answers the LLM judge was asked about (not decided by the checker):
 * one cell's evaluation, or one question's attempts on one stream.
 */
export async function questionsAskedOfJudge(
  pool: pg.Pool,
  studyId: string,
  scope: { cellId: string } | { stream: string; questionId: string },
): Promise<string[]> {
  const { rows } =
    'cellId' in scope
      ? await pool.query<{ question_id: string }>(
          `SELECT DISTINCT question_id FROM study_evaluations
            WHERE study_id = $1 AND cell_id = $2 AND judged_by <> 'exact'`,
          [studyId, scope.cellId],
        )
      : await pool.query<{ question_id: string }>(
          `SELECT DISTINCT question_id FROM study_attempts
            WHERE study_id = $1 AND stream = $2 AND question_id = $3 AND judged_by <> 'exact'`,
          [studyId, scope.stream, scope.questionId],
        );
  return rows.map((r) => r.question_id);
}

/** Grades the controls of the questions the judge was asked about in `scope` (see {@link questionsAskedOfJudge}). */
export async function controlTheJudge(
  models: ModelClient,
  pool: pg.Pool,
  input: { studyId: string; judge: ModelRole },
  scope: Parameters<typeof questionsAskedOfJudge>[2],
): Promise<void> {
  const questionIds = await questionsAskedOfJudge(pool, input.studyId, scope);
  await ensureJudgeControls(models, pool, { ...input, questionIds });
}

/** Who decided a set of verdicts, and how the judge did on its controls. */
export interface JudgeCheck {
  /** Verdicts by the deterministic checker, by the LLM judge, and judge failures (never scored). */
  readonly decidedBy: { readonly checker: number; readonly judge: number; readonly judgeFailed: number };
  readonly controls: number;
  readonly controlsPassed: number;
  /** null when the judge graded no control (it decided nothing here). */
  readonly controlPassRate: number | null;
}

/**
 * The judge check of a study (every stored verdict, sampling and evaluation) or of one cell (its
 * evaluation): the controls counted are those of the questions whose answers the judge was
 * asked about there.
 */
export async function judgeCheck(pool: pg.Pool, studyId: string, cellId?: string): Promise<JudgeCheck> {
  // A cell: its evaluation's verdicts; the study ($2 null): every evaluation and every attempt.
  const { rows } = await pool.query<{
    checker: number;
    judge: number;
    failed: number;
    n: number;
    ok: number;
  }>(
    `WITH v AS (
       SELECT question_id, judged_by FROM study_evaluations
        WHERE study_id = $1 AND ($2::text IS NULL OR cell_id = $2)
       UNION ALL
       SELECT question_id, judged_by FROM study_attempts WHERE study_id = $1 AND $2::text IS NULL),
          asked AS (SELECT DISTINCT question_id FROM v WHERE judged_by <> 'exact')
     SELECT (SELECT count(*) FILTER (WHERE judged_by = 'exact') FROM v)::int AS checker,
            (SELECT count(*) FILTER (WHERE judged_by = 'llm') FROM v)::int AS judge,
            (SELECT count(*) FILTER (WHERE judged_by = 'judge-failed') FROM v)::int AS failed,
            count(c.kind)::int AS n,
            count(c.kind) FILTER (WHERE c.verdict IS NOT DISTINCT FROM c.expected)::int AS ok
       FROM asked JOIN study_judge_controls c ON c.study_id = $1 AND c.question_id = asked.question_id`,
    [studyId, cellId ?? null],
  );
  const row = rows[0]!;
  return {
    decidedBy: { checker: row.checker, judge: row.judge, judgeFailed: row.failed },
    controls: row.n,
    controlsPassed: row.ok,
    controlPassRate: row.n > 0 ? row.ok / row.n : null,
  };
}
