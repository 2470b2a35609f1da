/**
 * Answer judge controls (issue 36): for every question whose answers the LLM judge decides (the
 * search benchmark's answers that are no exact match), the judge also grades two answers whose
 * verdict is known — the question's own reference (equivalent) and a wrong answer (not) — once
 * per run, with the same prompt and sampling as the real verdicts. Stored apart, never a score;
 * their pass rate says whether the judge's verdicts can be believed. A judge that calls every
 * answer equivalent passes half of them.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { controlTally, type ControlTally } from '../../schemas/judge-controls.js';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import { judgeControlsGraded } from '../telemetry/metrics.js';
import { judgeAnswer } from './search-match.js';

/** Ledger role of the control calls: the answer judge's endpoint and prompt, billed apart. */
export const ANSWER_JUDGE_CONTROL_ROLE = 'answer-judge-control';

export type AnswerControlKind = 'reference' | 'wrong';

/** A control answer and the verdict a believable judge gives it. */
export interface AnswerControl {
  readonly kind: AnswerControlKind;
  readonly answer: string;
  readonly expected: boolean;
}

/**
 * A wrong answer to a question with reference `gold`: another number for a numeric gold (a judge
 * must not call 43 and 86 the same), else a non-answer a strict judge never calls equivalent.
 */
export function wrongAnswer(gold: string): string {
  const number = /^\s*(-?\d+(?:\.\d+)?)\s*$/.exec(gold.replace(/,/g, ''));
  if (number) {
    const value = Number(number[1]);
    return String(value + Math.max(1, Math.abs(value)));
  }
  return 'I do not know.';
}

/** The two controls of a question. */
export function answerControls(gold: string): AnswerControl[] {
  return [
    { kind: 'reference', answer: gold, expected: true },
    { kind: 'wrong', answer: wrongAnswer(gold), expected: false },
  ];
}

/** What a question's controls are graded with. */
export interface AnswerControlInput {
  readonly runId: string;
  readonly question: string;
  readonly gold: string;
  readonly judge: ModelRole;
}

const questionKey = (question: string, gold: string) =>
  createHash('sha256').update(`${question}\n${gold}`).digest('hex');

/**
 * Grades the controls of a question in a run that are not stored yet: insert-if-absent, each call
 * cached like any other, so a retry pays nothing twice. A judge whose answer is still malformed
 * after the model layer's repair has failed the control (stored with `passed` null and why); an
 * endpoint failure throws and the activity is retried, as for a real verdict.
 */
export async function ensureAnswerControls(
  deps: { readonly pool: pg.Pool; readonly models: ModelClient; readonly signal?: AbortSignal },
  input: AnswerControlInput,
): Promise<void> {
  const key = questionKey(input.question, input.gold);
  const { rows } = await deps.pool.query<{ kind: AnswerControlKind }>(
    'SELECT kind FROM answer_judge_controls WHERE run_id = $1 AND question_key = $2',
    [input.runId, key],
  );
  const graded = new Set(rows.map((r) => r.kind));
  const pending = answerControls(input.gold).filter((c) => !graded.has(c.kind));
  await Promise.all(
    pending.map(async (control) => {
      const verdict = await judgeAnswer({
        models: deps.models,
        judge: input.judge,
        runId: input.runId,
        question: input.question,
        gold: input.gold,
        answer: control.answer,
        signal: deps.signal,
        role: ANSWER_JUDGE_CONTROL_ROLE,
      })
        .then((v) => ({ passed: v.equivalent === control.expected, reason: v.reason, key: v.cacheKey }))
        .catch((error: unknown) => {
          if (!(error instanceof StructuredOutputRejectedError)) throw error;
          return { passed: null, reason: error.reason, key: null };
        });
      const { rowCount } = await deps.pool.query(
        `INSERT INTO answer_judge_controls (run_id, question_key, kind, answer, expected, passed, reason, judge_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
        [
          input.runId,
          key,
          control.kind,
          control.answer,
          control.expected,
          verdict.passed,
          verdict.reason,
          verdict.key,
        ],
      );
      if (rowCount)
        judgeControlsGraded.inc({ judge: 'answer', outcome: verdict.passed ? 'passed' : 'failed' });
    }),
  );
}

/** The answer judge's controls of `runId`; one with no readable verdict counts as failed. */
export async function answerControlTally(pool: pg.Pool, runId: string): Promise<ControlTally> {
  const { rows } = await pool.query<{ n: number; ok: number }>(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE passed)::int AS ok
       FROM answer_judge_controls WHERE run_id = $1`,
    [runId],
  );
  return controlTally(rows[0]!.n, rows[0]!.ok);
}
