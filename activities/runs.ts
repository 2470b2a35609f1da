import { loadEnvironment } from '../schemas/environment.js';
import {
  viewerRunUrl,
  type RunFinish,
  type RunPause,
  type RunStart,
  type RunStarted,
} from '../schemas/run-records.js';
import type { SpecFile } from '../schemas/spec-files.js';
import { checkSpecFiles } from './data-files.js';
import { RunIdTakenError } from './errors.js';
import { runSpend } from './llm/spend.js';
import { getPool } from './store/db.js';

/** Activities that keep the `runs` table in step with the workflows. */
export function createRunActivities(databaseUrl: string) {
  const pool = () => getPool(databaseUrl);
  return {
    /**
     * Refuses a spec whose data files this worker cannot find or read, naming each field, before
     * the run records or reads anything (the workflows' start-up awaits it).
     */
    async checkSpecFiles({ files }: { files: SpecFile[] }): Promise<void> {
      await checkSpecFiles(files);
    },

    /**
     * Registers a run. A new execution under the same id (a study re-run to extend its grid, a
     * synthesis started again) takes the row over: its spec, status running, no summary yet. An id
     * already used by a run of another kind is refused: the two would share tasks and ledgers.
     * Returns the run's page in the viewer, as this worker's environment says where users open
     * it; the workflow links it from its Temporal UI details.
     */
    async recordRunStart({ runId, kind, spec }: RunStart): Promise<RunStarted> {
      const { rows } = await pool().query<{ kind: string }>(
        `INSERT INTO runs (run_id, kind, spec) VALUES ($1, $2, $3)
         ON CONFLICT (run_id) DO UPDATE
           SET spec = EXCLUDED.spec, status = 'running', summary = NULL, updated_at = now()
           WHERE runs.kind = EXCLUDED.kind
         RETURNING kind`,
        [runId, kind, JSON.stringify(spec)],
      );
      if (rows.length === 0) {
        const { rows: held } = await pool().query<{ kind: string }>(
          'SELECT kind FROM runs WHERE run_id = $1',
          [runId],
        );
        throw new RunIdTakenError(runId, held[0]?.kind ?? 'different', kind);
      }
      const budgetUsd = (spec as { budgetUsd?: unknown } | null)?.budgetUsd;
      return {
        viewerUrl: viewerRunUrl(loadEnvironment(), runId),
        ...(typeof budgetUsd === 'number' ? { budgetUsd } : {}),
      };
    },
    /** What the run has spent on priced model calls so far (the ledger: each answer once). */
    async runSpend({ runId }: { runId: string }): Promise<{ costUsd: number; calls: number }> {
      return runSpend(pool(), runId);
    },
    /** Records that the run paused itself and why (reason), or that it runs again (null). */
    async recordRunPause({ runId, reason }: RunPause): Promise<void> {
      await pool().query(
        `UPDATE runs SET status = $2, pause_reason = $3, updated_at = now() WHERE run_id = $1`,
        [runId, reason === null ? 'running' : 'paused', reason],
      );
    },
    /** Records the end state and summary of a run (idempotent: the same values again). */
    async recordRunFinish({ runId, state, summary }: RunFinish): Promise<void> {
      await pool().query(
        `UPDATE runs SET status = $2, summary = COALESCE($3, summary), pause_reason = NULL, updated_at = now() WHERE run_id = $1`,
        [runId, state, summary === undefined ? null : JSON.stringify(summary)],
      );
    },
  };
}

/** The run activities' interface, for `proxyActivities` in workflows. */
export type RunActivities = ReturnType<typeof createRunActivities>;
