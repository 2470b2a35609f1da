import pg from 'pg';

/** A task id of the run for the SQL expression `idx` (as activities/synthesis/task-id.ts spells it). */
const taskIdSql = (idx: string) => `$1 || '-task-' || lpad((${idx})::text, 5, '0')`;

/** The task index a row's task id or ledger run id ends with. */
const idxOf = (column: string) => `substring(${column} from '-task-([0-9]+)$')::int`;

/**
 * Per table: which rows of the run are copied, and the columns a copy changes (the rest are kept):
 * copy `k` of task `idx` is task `idx + k·n`, with keys made unique by the copy number.
 */
const TABLES: ReadonlyArray<{ table: string; where: string; changed: Record<string, string> }> = [
  {
    table: 'tasks',
    where: 'run_id = $1',
    changed: { task_id: taskIdSql('idx + k * $2'), idx: 'idx + k * $2' },
  },
  {
    table: 'episodes',
    where: `starts_with(task_id, $1 || '-task-')`,
    changed: {
      episode_id: `episode_id || '~' || k`,
      task_id: taskIdSql(`${idxOf('task_id')} + k * $2`),
    },
  },
  {
    table: 'tool_mappings',
    where: `starts_with(task_id, $1 || '-task-')`,
    changed: { task_id: taskIdSql(`${idxOf('task_id')} + k * $2`) },
  },
  {
    table: 'llm_calls',
    where: `starts_with(run_id, $1 || '-task-')`,
    changed: { cache_key: `cache_key || '~' || k`, run_id: taskIdSql(`${idxOf('run_id')} + k * $2`) },
  },
];

/**
 * Grows a finished Synthesis run of `tasks` tasks in PostgreSQL to `target` tasks by copying its
 * tasks, demonstrations, tool mappings and ledger rows (each copy a new task, as the same run would
 * have made it), then vacuums and analyzes them as autovacuum would. What users read (status,
 * report, viewer, export) then sees a run of `target` tasks; the Temporal side is not copied.
 * Returns the rows added per table.
 */
export async function amplifyRun(
  databaseUrl: string,
  runId: string,
  tasks: number,
  target: number,
): Promise<Record<string, number>> {
  if (target % tasks !== 0 || target > 100_000)
    throw new Error(`amplify to a multiple of ${tasks} tasks, at most 100000 (5-digit task ids)`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const added: Record<string, number> = {};
    for (const { table, where, changed } of TABLES) {
      const { rows } = await client.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns
          WHERE table_name = $1 AND table_schema = current_schema() AND is_generated = 'NEVER'
          ORDER BY ordinal_position`,
        [table],
      );
      const columns = rows.map((r) => r.column_name);
      const values = columns.map((c) => changed[c] ?? c);
      const result = await client.query(
        `INSERT INTO ${table} (${columns.join(', ')})
         SELECT ${values.join(', ')} FROM ${table} CROSS JOIN generate_series(1, $3::int) AS k WHERE ${where}`,
        [runId, tasks, target / tasks - 1],
      );
      added[table] = result.rowCount ?? 0;
      await client.query(`VACUUM ANALYZE ${table}`);
    }
    return added;
  } finally {
    await client.end();
  }
}
