import type pg from 'pg';
import { CLI_INVOCATION } from '../deploy/paths.js';
import { renderRecord, renderTable } from './table.js';

/**
 * How each task of a synthesis run ended, from its own row in `tasks`: kept, rejected (by a
 * filter, with its reason) or failed (its workflow failed: the stage it was in and the error), so
 * the demo's summary and `mockworld report` hide no task, and `status --task N` says one task's
 * story without a worker.
 */

/** One task's outcome as the report lists it. */
export interface TaskOutcome {
  readonly task: number;
  /** kept | rejected | failed, or the stage a task still running is in. */
  readonly outcome: string;
  /** Where it ended: the stage that rejected it, or that it was in when it failed. */
  readonly stage: string | null;
  /** The rejection reason, or the failure's error type. */
  readonly reason: string | null;
  readonly detail: string | null;
}

/** The tasks a report lists, and how many it leaves out. */
export interface TaskOutcomes {
  readonly rows: TaskOutcome[];
  readonly omitted: number;
}

/** Tasks a report lists at most: failed ones first, then rejected, running and kept ones. */
export const LISTED_TASKS = 20;
/** Characters of a reason's detail the list shows (`status --task N` shows it whole). */
const DETAIL_CHARS = 100;

/**
 * The stage a rejection reason comes from, for rows that do not record it: model_output_rejected
 * details start with the stage whose answer was refused ("refine: truncated: ...").
 */
function rejectedAt(reason: string | null, detail: string | null): string | null {
  switch (reason) {
    case 'invalid_persona':
    case 'invalid_tools':
      return 'toolset';
    case 'invalid_refined_tools':
      return 'refine';
    case 'low_coverage':
    case 'demonstrations_rejected':
      return 'rubric';
    default: {
      const stage = /^([A-Za-z-]+): /.exec(detail ?? '')?.[1];
      return stage ?? null;
    }
  }
}

interface TaskRow {
  idx: number;
  stage: string;
  failed_stage: string | null;
  reject_reason: string | null;
  reject_detail: string | null;
}

function outcomeOf(row: TaskRow, detailChars = DETAIL_CHARS): TaskOutcome {
  const ended = ['kept', 'rejected', 'failed'].includes(row.stage);
  const detail = row.reject_detail?.replace(/\s+/g, ' ') ?? null;
  return {
    task: row.idx,
    outcome: ended ? row.stage : `running (${row.stage})`,
    stage:
      row.stage === 'kept'
        ? null
        : (row.failed_stage ??
          (row.stage === 'rejected' ? rejectedAt(row.reject_reason, detail) : row.stage)),
    reason: row.reject_reason,
    detail: detail && detail.length > detailChars ? `${detail.slice(0, detailChars - 1)}…` : detail,
  };
}

/** Reads the outcome of a run's tasks: failed first, then rejected, running and kept, each by index. */
export async function readTaskOutcomes(pool: pg.Pool, runId: string): Promise<TaskOutcomes> {
  const { rows } = await pool.query<TaskRow & { total: number }>(
    `SELECT idx, stage, failed_stage, reject_reason, reject_detail, count(*) OVER ()::int AS total
       FROM tasks WHERE run_id = $1
      ORDER BY CASE stage WHEN 'failed' THEN 0 WHEN 'rejected' THEN 1 WHEN 'kept' THEN 3 ELSE 2 END, idx
      LIMIT $2`,
    [runId, LISTED_TASKS],
  );
  return {
    rows: rows.map((row) => outcomeOf(row)),
    omitted: Math.max(0, (rows[0]?.total ?? 0) - rows.length),
  };
}

/** The task list of a report, and a pointer to one task's whole story (a failed one when there is one). */
export function renderTaskOutcomes(runId: string, outcomes: TaskOutcomes): string {
  if (outcomes.rows.length === 0) return 'tasks\n(none yet)';
  const rows = outcomes.rows.map((o) => ({
    task: o.task,
    outcome: o.outcome,
    stage: o.stage ?? '-',
    reason: o.reason ?? '-',
    detail: o.detail ?? '',
  }));
  const first = outcomes.rows.find((o) => o.outcome === 'failed') ?? outcomes.rows[0]!;
  return [
    'tasks (failed, rejected and kept, each with where and why it ended)',
    renderTable(rows, ['task', 'outcome', 'stage', 'reason', 'detail']),
    ...(outcomes.omitted ? [`… and ${outcomes.omitted} more (kept or rejected) in table tasks`] : []),
    `one task in full: ${CLI_INVOCATION} status ${runId} --task ${first.task}`,
  ].join('\n');
}

/** One task's record in full, for `status --task N`; undefined when the run has no such task row. */
export async function readTaskRecord(
  pool: pg.Pool,
  runId: string,
  idx: number,
): Promise<Record<string, unknown> | undefined> {
  const { rows } = await pool.query(
    `SELECT t.idx, t.task_id, t.persona_id, t.stage, t.failed_stage, t.reject_reason, t.reject_detail,
            jsonb_array_length(t.workflow) AS workflow_steps, jsonb_array_length(t.tools) AS tools,
            t.tool_repairs, t.instruction, t.hidden_context, t.rubric, t.coverage,
            (SELECT json_agg(json_build_object('episode', e.episode_id, 'turns', e.turns, 'toolCalls', e.tool_calls,
                                               'userQuestions', e.user_questions, 'end', e.end_reason) ORDER BY e.sample_index)
               FROM episodes e WHERE e.task_id = t.task_id AND e.purpose = 'demonstration') AS demonstrations
       FROM tasks t WHERE t.run_id = $1 AND t.idx = $2`,
    [runId, idx],
  );
  const row = rows[0];
  if (!row) return undefined;
  const outcome = outcomeOf(row, Number.POSITIVE_INFINITY);
  return {
    task: row.idx,
    id: row.task_id,
    persona: row.persona_id,
    outcome: outcome.outcome,
    stage: outcome.stage,
    reason: outcome.reason,
    detail: row.reject_detail,
    workflowSteps: row.workflow_steps,
    tools: row.tools,
    toolRepairs: row.tool_repairs,
    instruction: row.instruction,
    hiddenContext: row.hidden_context,
    demonstrations: row.demonstrations,
    coverage: row.coverage,
    rubric: row.rubric,
  };
}

/** A task record as a field/value table (empty fields left out). */
export function renderTaskRecord(record: Record<string, unknown>): string {
  return renderRecord(
    Object.fromEntries(Object.entries(record).filter(([, v]) => v !== null && v !== undefined)),
  );
}
