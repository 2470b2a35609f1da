import pg from 'pg';

/** Every row of every table of a database, as canonical JSON text, by table. */
export type Snapshot = Map<string, string[]>;

/**
 * Tables derived from others by the database itself, whose rows change by design: `llm_usage`
 * sums `llm_calls` (migration 036), whose rows are in the snapshot.
 */
const DERIVED = new Set(['llm_usage']);

/** The base tables of the public schema; without `derived`, only those that hold what was stored. */
export async function tableNames(url: string, derived = false): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`,
    );
    return rows.map((r) => r.name).filter((name) => derived || !DERIVED.has(name));
  } finally {
    await client.end();
  }
}

/** Reads every row of every table (jsonb text is canonical: equal rows give equal text). */
export async function snapshot(url: string): Promise<Snapshot> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result: Snapshot = new Map();
    for (const table of await tableNames(url)) {
      // The name comes from information_schema; quoted as an identifier.
      const { rows } = await client.query<{ row: string }>(
        `SELECT to_jsonb(t)::text AS row FROM "${table.replaceAll('"', '""')}" t`,
      );
      result.set(table, rows.map((r) => r.row).sort());
    }
    return result;
  } finally {
    await client.end();
  }
}

/**
 * Rows of `before` that are not in `after` exactly (lost, or altered in any column), and tables
 * that disappeared. Empty when everything stored before is still there, unchanged.
 */
export function lostOrAltered(before: Snapshot, after: Snapshot): string[] {
  const problems: string[] = [];
  for (const [table, rows] of before) {
    const now = after.get(table);
    if (!now) {
      problems.push(`table ${table} is gone`);
      continue;
    }
    const present = new Set(now);
    for (const row of rows) if (!present.has(row)) problems.push(`${table}: ${row.slice(0, 300)}`);
  }
  return problems;
}

/** Rows of `after` that `before` did not have, by table (what an operation added). */
export function added(before: Snapshot, after: Snapshot): Map<string, string[]> {
  const result = new Map<string, string[]>();
  for (const [table, rows] of after) {
    const old = new Set(before.get(table) ?? []);
    const fresh = rows.filter((row) => !old.has(row));
    if (fresh.length) result.set(table, fresh);
  }
  return result;
}
