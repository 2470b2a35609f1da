import type pg from 'pg';
import type { ControlTally } from '../../schemas/judge-controls.js';
import { coverageControlTally } from './coverage-controls.js';

/** The statistics of a synthesis run (the seed's Table 1 analogue), all from PostgreSQL. */
export interface SynthesisReport {
  readonly tasks: number;
  readonly kept: number;
  readonly rejected: number;
  readonly rejectedByReason: Record<string, number>;
  /** Tasks whose workflow failed, by the stage they were in (their rows say which error). */
  readonly failed: number;
  readonly failedByStage: Record<string, number>;
  readonly personasRefused: Record<string, number>;
  readonly toolsPerTask: Summary;
  readonly workflowStepsPerTask: Summary;
  readonly demonstrations: number;
  readonly demonstrationsKept: number;
  /** Kept demonstrations that called a task tool, asked the user, and did both (the seed's agentic shape). */
  readonly keptDemonstrationsThat: {
    readonly calledATool: number;
    readonly askedTheUser: number;
    readonly both: number;
  };
  readonly turnsPerDemonstration: Summary;
  readonly userQuestionsPerDemonstration: Summary;
  readonly toolCallsPerDemonstration: Summary;
  readonly mappingEntries: number;
  /** The coverage judge's control verdicts (coverage-controls.ts): never a filter decision. */
  readonly coverageJudgeControls: ControlTally;
  readonly usageByRole: {
    role: string;
    calls: number;
    /** Of the calls, those answered in provider batch jobs. */
    batchedCalls: number;
    promptTokens: number;
    completionTokens: number;
  }[];
}

/** Mean, min and max of a column over kept tasks (or their demonstrations). */
export interface Summary {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

const summary = (column: string) =>
  `json_build_object('mean', round(coalesce(avg(${column}), 0)::numeric, 2), 'min', coalesce(min(${column}), 0), 'max', coalesce(max(${column}), 0))`;

/** Computes the report of run `runId`; tasks are the rows whose id starts with the run id. */
export async function synthesisReport(pool: pg.Pool, runId: string): Promise<SynthesisReport> {
  const prefix = `${runId}-task-%`;
  const [outcomes, shapes, demos, refused, mapping, usage, coverageJudgeControls] = await Promise.all([
    pool.query(
      `SELECT stage, reject_reason, failed_stage, count(*)::int AS n FROM tasks WHERE run_id = $1 GROUP BY 1, 2, 3`,
      [runId],
    ),
    pool.query(
      `SELECT ${summary('jsonb_array_length(tools)')} AS tools, ${summary('jsonb_array_length(workflow)')} AS steps
         FROM tasks WHERE run_id = $1 AND stage = 'kept'`,
      [runId],
    ),
    pool.query(
      `SELECT count(*)::int AS n,
              count(*) FILTER (WHERE (c.value ->> 'kept')::boolean)::int AS kept,
              count(*) FILTER (WHERE (c.value ->> 'kept')::boolean AND e.tool_calls > 0)::int AS called,
              count(*) FILTER (WHERE (c.value ->> 'kept')::boolean AND e.user_questions > 0)::int AS asked,
              count(*) FILTER (WHERE (c.value ->> 'kept')::boolean AND e.tool_calls > 0 AND e.user_questions > 0)::int AS both,
              ${summary('e.turns')} AS turns, ${summary('e.user_questions')} AS questions, ${summary('e.tool_calls')} AS calls
         FROM tasks t
         JOIN episodes e ON e.task_id = t.task_id AND e.purpose = 'demonstration'
         LEFT JOIN LATERAL jsonb_array_elements(t.coverage) c ON c.value ->> 'episodeId' = e.episode_id
        WHERE t.run_id = $1 AND t.stage = 'kept'`,
      [runId],
    ),
    pool.query(
      `SELECT reason, count(*)::int AS n FROM synthesis_persona_rejections WHERE run_id = $1 GROUP BY 1`,
      [runId],
    ),
    pool.query(`SELECT count(*)::int AS n FROM tool_mappings WHERE task_id LIKE $1`, [prefix]),
    pool.query(
      // The ledger's rollup (migration 036): a few rows, however many calls the run paid for.
      `SELECT role, calls::float8 AS calls, batched_calls::float8 AS "batchedCalls",
              prompt_tokens::float8 AS "promptTokens", completion_tokens::float8 AS "completionTokens"
         FROM llm_usage WHERE owner_run_id = $1 ORDER BY role`,
      [runId],
    ),
    coverageControlTally(pool, runId),
  ]);
  const rejectedByReason: Record<string, number> = {};
  let kept = 0;
  let rejected = 0;
  let failed = 0;
  const failedByStage: Record<string, number> = {};
  let tasks = 0;
  for (const row of outcomes.rows) {
    tasks += row.n;
    if (row.stage === 'kept') kept += row.n;
    if (row.stage === 'rejected') {
      rejected += row.n;
      rejectedByReason[row.reject_reason] = (rejectedByReason[row.reject_reason] ?? 0) + row.n;
    }
    if (row.stage === 'failed') {
      failed += row.n;
      const stage = row.failed_stage ?? 'unknown';
      failedByStage[stage] = (failedByStage[stage] ?? 0) + row.n;
    }
  }
  const demo = demos.rows[0];
  return {
    tasks,
    kept,
    rejected,
    rejectedByReason,
    failed,
    failedByStage,
    personasRefused: Object.fromEntries(refused.rows.map((r) => [r.reason, r.n])),
    toolsPerTask: shapes.rows[0].tools,
    workflowStepsPerTask: shapes.rows[0].steps,
    demonstrations: demo.n,
    demonstrationsKept: demo.kept,
    keptDemonstrationsThat: { calledATool: demo.called, askedTheUser: demo.asked, both: demo.both },
    turnsPerDemonstration: demo.turns,
    userQuestionsPerDemonstration: demo.questions,
    toolCallsPerDemonstration: demo.calls,
    mappingEntries: mapping.rows[0].n,
    coverageJudgeControls,
    usageByRole: usage.rows,
  };
}
