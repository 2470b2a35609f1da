import type { RunFinish, RunStart } from '../schemas/run-records';
import { getPool } from './store/db';

/** Activities that keep the `runs` table in step with the workflows. */
export function createRunActivities(databaseUrl: string) {
  const pool = () => getPool(databaseUrl);
  return {
    /** Registers a run; a retry or a replayed start leaves the first row as it was. */
    async recordRunStart({ runId, kind, spec }: RunStart): Promise<void> {
      await pool().query(
        `INSERT INTO runs (run_id, kind, spec) VALUES ($1, $2, $3)
         ON CONFLICT (run_id) DO NOTHING`,
        [runId, kind, JSON.stringify(spec)],
      );
    },
    /** Records the end state and summary of a run (idempotent: the same values again). */
    async recordRunFinish({ runId, state, summary }: RunFinish): Promise<void> {
      await pool().query(
        `UPDATE runs SET status = $2, summary = COALESCE($3, summary), updated_at = now() WHERE run_id = $1`,
        [runId, state, summary === undefined ? null : JSON.stringify(summary)],
      );
    },
  };
}

/** The run activities' interface, for `proxyActivities` in workflows. */
export type RunActivities = ReturnType<typeof createRunActivities>;
