import type pg from 'pg';

/** One task in the task list of a synthesis run. */
export interface TaskListRow {
  readonly taskId: string;
  readonly idx: number;
  readonly personaId: string;
  readonly stage: string;
  readonly rejectReason: string | null;
  readonly rejectDetail: string | null;
  readonly instruction: string | null;
}

/** Filters of the task list; absent = all. */
export interface TaskFilter {
  readonly stage?: string;
  readonly reason?: string;
  /** The page after this task index (keyset paging: as fast at task 99,000 as at task 0). */
  readonly after?: number;
}

/** Tasks per page of the task list. */
export const TASK_PAGE = 500;

/** One page of the tasks of a run, by index, filtered by stage and rejection reason. */
export async function listTasks(pool: pg.Pool, runId: string, filter: TaskFilter): Promise<TaskListRow[]> {
  const { rows } = await pool.query<{
    task_id: string;
    idx: number;
    persona_id: string;
    stage: string;
    reject_reason: string | null;
    reject_detail: string | null;
    instruction: string | null;
  }>(
    `SELECT task_id, idx, persona_id, stage, reject_reason, reject_detail, instruction FROM tasks
      WHERE run_id = $1 AND ($2::text IS NULL OR stage = $2) AND ($3::text IS NULL OR reject_reason = $3)
        AND idx > $4 ORDER BY idx LIMIT ${TASK_PAGE}`,
    [runId, filter.stage ?? null, filter.reason ?? null, filter.after ?? -1],
  );
  return rows.map((r) => ({
    taskId: r.task_id,
    idx: r.idx,
    personaId: r.persona_id,
    stage: r.stage,
    rejectReason: r.reject_reason,
    rejectDetail: r.reject_detail,
    instruction: r.instruction,
  }));
}

/** Counts by stage and by rejection reason: the filter choices, each with its count. */
export async function taskFacets(
  pool: pg.Pool,
  runId: string,
): Promise<{ stages: Map<string, number>; reasons: Map<string, number> }> {
  const { rows } = await pool.query<{ stage: string; reject_reason: string | null; n: number }>(
    'SELECT stage, reject_reason, count(*)::int AS n FROM tasks WHERE run_id = $1 GROUP BY 1, 2 ORDER BY 1, 2',
    [runId],
  );
  const stages = new Map<string, number>();
  const reasons = new Map<string, number>();
  for (const r of rows) {
    stages.set(r.stage, (stages.get(r.stage) ?? 0) + r.n);
    if (r.reject_reason) reasons.set(r.reject_reason, (reasons.get(r.reject_reason) ?? 0) + r.n);
  }
  return { stages, reasons };
}

/** Everything stored of one task. */
export interface TaskDetail {
  readonly taskId: string;
  readonly runId: string;
  readonly idx: number;
  readonly personaId: string;
  readonly persona: string | null;
  readonly stage: string;
  readonly rejectReason: string | null;
  readonly rejectDetail: string | null;
  readonly failedStage: string | null;
  readonly scenario: string | null;
  readonly workflow: unknown;
  readonly draftTools: unknown;
  readonly tools: unknown;
  readonly toolRepairs: unknown;
  readonly forbidden: unknown;
  readonly request: string | null;
  readonly refinement: unknown;
  readonly instruction: string | null;
  readonly hiddenContext: string | null;
  readonly rubric: unknown;
  readonly coverage: unknown;
  readonly provenance: unknown;
}

/** One task with its persona's text, or undefined. */
export async function findTask(pool: pg.Pool, taskId: string): Promise<TaskDetail | undefined> {
  const { rows } = await pool.query<Record<string, unknown>>(
    `SELECT t.*, p.persona FROM tasks t
       LEFT JOIN synthesis_personas p ON p.run_id = t.run_id AND p.persona_id = t.persona_id
      WHERE t.task_id = $1`,
    [taskId],
  );
  const r = rows[0];
  if (!r) return undefined;
  const text = (key: string) => (r[key] === null || r[key] === undefined ? null : String(r[key]));
  return {
    taskId: String(r.task_id),
    runId: String(r.run_id),
    idx: Number(r.idx),
    personaId: String(r.persona_id),
    persona: text('persona'),
    stage: String(r.stage),
    rejectReason: text('reject_reason'),
    rejectDetail: text('reject_detail'),
    failedStage: text('failed_stage'),
    scenario: text('scenario'),
    workflow: r.workflow,
    draftTools: r.draft_tools,
    tools: r.tools,
    toolRepairs: r.tool_repairs ?? null,
    forbidden: r.forbidden,
    request: text('request'),
    refinement: r.refinement,
    instruction: text('instruction'),
    hiddenContext: text('hidden_context'),
    rubric: r.rubric,
    coverage: r.coverage,
    provenance: r.provenance,
  };
}

/** One entry of a task's tool mapping. */
export interface MappingRow {
  readonly tool: string;
  readonly argsKey: string;
  readonly args: unknown;
  readonly response: unknown;
  readonly source: string;
  readonly equivalentTo: string | null;
  readonly createdAt: Date;
}

/** The finite mapping M of a task, oldest entry first. */
export async function taskMapping(pool: pg.Pool, taskId: string): Promise<MappingRow[]> {
  const { rows } = await pool.query<{
    tool: string;
    args_key: string;
    args: unknown;
    response: unknown;
    source: string;
    equivalent_to: string | null;
    created_at: Date;
  }>(
    `SELECT tool, args_key, args, response, source, equivalent_to, created_at FROM tool_mappings
      WHERE task_id = $1 ORDER BY created_at, tool, args_key LIMIT 5000`,
    [taskId],
  );
  return rows.map((r) => ({
    tool: r.tool,
    argsKey: r.args_key,
    args: r.args,
    response: r.response,
    source: r.source,
    equivalentTo: r.equivalent_to,
    createdAt: r.created_at,
  }));
}
