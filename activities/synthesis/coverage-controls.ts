/**
 * Coverage judge controls (issue 36): for every task whose demonstrations the coverage judge
 * grades, it also grades one whose coverage is known — an empty transcript, in which no workflow
 * step is done — with the same prompt and sampling, once per task. Stored apart, it never decides
 * which demonstrations are kept; its pass rate says whether the coverage filter can be believed. A
 * judge that calls every step executed (the embedded toy does) keeps every demonstration and fails
 * every control.
 */
import type pg from 'pg';
import {
  controlTally,
  DEFAULT_MIN_PASS_RATE,
  judgeStanding,
  type ControlTally,
  type JudgeStanding,
} from '../../schemas/judge-controls.js';
import type { ModelClient } from '../llm/index.js';
import { judgeControlsGraded } from '../telemetry/metrics.js';
import { judgeCoverage, type CoverageInput } from './coverage.js';

/** Ledger role of the control calls: the coverage judge's endpoint and prompt, billed apart. */
export const COVERAGE_JUDGE_CONTROL_ROLE = 'coverage-judge-control';

/** What a task's control is graded with: the task's workflow and instruction, the run's judge. */
export type CoverageControlInput = Omit<CoverageInput, 'episodeId' | 'messages' | 'threshold' | 'role'> & {
  readonly runId: string;
};

/**
 * Grades the task's empty-transcript control unless it is stored already: the call is cached like
 * any other and the row is insert-if-absent, so a retried activity pays and counts it once. A judge
 * whose answer stays malformed after the model layer's repair has failed the control (stored with
 * `passed` null and why); an endpoint failure throws and the activity is retried.
 */
export async function ensureCoverageControl(
  deps: { readonly pool: pg.Pool; readonly models: ModelClient },
  input: CoverageControlInput,
): Promise<void> {
  const { rows } = await deps.pool.query(
    "SELECT 1 FROM coverage_judge_controls WHERE run_id = $1 AND task_id = $2 AND kind = 'empty'",
    [input.runId, input.taskId],
  );
  if (rows.length) return;
  const { runId, ...task } = input;
  const verdict = await judgeCoverage(deps.models, {
    ...task,
    episodeId: 'control:empty',
    messages: [],
    threshold: 1,
    role: COVERAGE_JUDGE_CONTROL_ROLE,
  });
  const passed = verdict.judgeFailed === undefined ? verdict.executedSteps.length === 0 : null;
  const { rowCount } = await deps.pool.query(
    `INSERT INTO coverage_judge_controls (run_id, task_id, kind, executed_steps, passed, failure)
     VALUES ($1, $2, 'empty', $3, $4, $5) ON CONFLICT DO NOTHING`,
    [
      runId,
      input.taskId,
      passed === null ? null : JSON.stringify(verdict.executedSteps),
      passed,
      verdict.judgeFailed ?? null,
    ],
  );
  if (rowCount) judgeControlsGraded.inc({ judge: 'coverage', outcome: passed ? 'passed' : 'failed' });
}

/** The coverage judge's controls of `runId`; one with no readable verdict counts as failed. */
export async function coverageControlTally(pool: pg.Pool, runId: string): Promise<ControlTally> {
  const { rows } = await pool.query<{ n: number; ok: number }>(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE passed)::int AS ok
       FROM coverage_judge_controls WHERE run_id = $1`,
    [runId],
  );
  return controlTally(rows[0]!.n, rows[0]!.ok);
}

/**
 * The coverage judge's standing in run `runId` by its controls so far (`tally` when the caller has
 * counted them), against the spec's `judgeControls.minPassRate` (specs from before controls: the
 * default); undefined before any control is graded.
 */
export async function coverageJudgeStanding(
  pool: pg.Pool,
  runId: string,
  counted?: ControlTally,
): Promise<JudgeStanding | undefined> {
  const [tally, spec] = await Promise.all([
    counted ?? coverageControlTally(pool, runId),
    pool.query<{ min: number | null }>(
      "SELECT (spec -> 'judgeControls' ->> 'minPassRate')::float8 AS min FROM runs WHERE run_id = $1",
      [runId],
    ),
  ]);
  return judgeStanding(
    tally,
    spec.rows[0]?.min ?? DEFAULT_MIN_PASS_RATE,
    'kept demonstrations and rubrics',
    'empty control demonstrations',
    'models.coverageJudge.endpoint',
  );
}
