/**
 * What one path of the GRPO benchmark costs: CPU of every process involved (this one by thread
 * kind, the dev server, the model server, the PostgreSQL backends of the path's database),
 * database activity, and the rows the run left.
 */
import os from 'node:os';
import pg from 'pg';
import { processCpuMs, threadCpuMs } from './cpu.js';

/** CPU used during one path's run, in ms. */
export interface CpuMs {
  /** This process: the worker and its activities (Temporal path) or the plain loop. */
  readonly bench: number;
  /** The Temporal dev server (0 for the plain path). */
  readonly temporalServer: number;
  /** The model server child (the same work on both paths). */
  readonly modelServer: number;
  /** PostgreSQL backends serving this path's database (sampled by pid; a backend that exited mid-run is missed). */
  readonly postgres: number;
  /** `bench` by thread kind (see {@link threadCpuMs}); threads that ended mid-run are missed. */
  readonly benchThreads: Record<string, number>;
}

export interface DbActivity {
  /** Sessions (connections) opened: a pool that keeps its connections opens few. */
  readonly sessions: number;
  readonly commits: number;
  readonly inserted: number;
  readonly updated: number;
  readonly fetched: number;
}

async function dbBackendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
    database,
  ]);
  return new Map(rows.map((r) => [r.pid, processCpuMs(r.pid)]));
}

async function dbActivity(admin: pg.Client, database: string): Promise<DbActivity> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query(
    `SELECT sessions::float8 AS sessions, xact_commit::float8 AS commits, tup_inserted::float8 AS inserted, tup_updated::float8 AS updated,
            tup_fetched::float8 AS fetched FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  const r = rows[0] ?? {};
  return {
    sessions: r.sessions ?? 0,
    commits: r.commits ?? 0,
    inserted: r.inserted ?? 0,
    updated: r.updated ?? 0,
    fetched: r.fetched ?? 0,
  };
}

/** Starts CPU and database-write meters for a path; the returned function reads them. */
export async function meters(dbUrl: string, pids: { temporalServer?: number; modelServer: number }) {
  const database = decodeURIComponent(new URL(dbUrl).pathname.slice(1));
  const admin = new pg.Client({ connectionString: dbUrl.replace(/\/[^/]*$/, '/postgres') });
  await admin.connect();
  const own0 = process.cpuUsage();
  const threads0 = threadCpuMs();
  const server0 = processCpuMs(pids.temporalServer);
  const model0 = processCpuMs(pids.modelServer);
  const pg0 = await dbBackendCpu(admin, database);
  const db0 = await dbActivity(admin, database);
  const load0 = os.loadavg()[0]!;
  return async () => {
    const own = process.cpuUsage(own0);
    const threads1 = threadCpuMs();
    const pg1 = await dbBackendCpu(admin, database);
    let postgres = 0;
    for (const [pid, ms] of pg1) postgres += ms - (pg0.get(pid) ?? 0);
    // pg_stat_database is updated by backends when they go idle; give them a moment.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const db1 = await dbActivity(admin, database);
    await admin.end();
    const cpu: CpuMs = {
      bench: (own.user + own.system) / 1000,
      temporalServer: pids.temporalServer ? processCpuMs(pids.temporalServer) - server0 : 0,
      modelServer: processCpuMs(pids.modelServer) - model0,
      postgres,
      benchThreads: Object.fromEntries(
        Object.entries(threads1).map(([kind, ms]) => [kind, ms - (threads0[kind] ?? 0)]),
      ),
    };
    const db: DbActivity = {
      sessions: db1.sessions - db0.sessions,
      commits: db1.commits - db0.commits,
      inserted: db1.inserted - db0.inserted,
      updated: db1.updated - db0.updated,
      fetched: db1.fetched - db0.fetched,
    };
    return { cpu, db, loadAvg: { start: load0, end: os.loadavg()[0]! } };
  };
}

export async function countRows(url: string, runId: string) {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const one = async (text: string, values: unknown[] = []) =>
      Number(Object.values((await sql.query(text, values)).rows[0] ?? {})[0] ?? 0);
    return {
      episodes: await one(`SELECT count(*)::int FROM episodes WHERE end_reason IS NOT NULL`),
      judgements: await one(`SELECT count(*)::int FROM judgements WHERE run_id = $1`, [runId]),
      rewardMean: await one(`SELECT coalesce(avg(reward), 0)::float8 FROM judgements WHERE run_id = $1`, [
        runId,
      ]),
      llmCalls: await one('SELECT count(*)::int FROM llm_calls'),
    };
  } finally {
    await sql.end();
  }
}
