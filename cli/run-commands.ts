import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { getPool } from '../activities/store/db.js';
import { readIterationMetrics, type IterationMetrics } from '../activities/training/metrics.js';
import { renderRewardSvg } from '../activities/training/reward-plot.js';
import { usageByRole } from '../activities/llm/index.js';
import { queryRolesAnsweredBy } from '../activities/llm/call-store.js';
import { EMBEDDED_MODEL_NAME } from '../activities/llm/default-endpoint.js';
import { loadEnvironment } from '../schemas/environment.js';
import { statusQuery } from '../workflows/controls.js';
import { exportRunFormats, type FormatsExport } from '../activities/export/index.js';
import { datasetDirectoryName } from '../activities/synthesis/export.js';
import type { ExportFormat } from '../schemas/export-formats.js';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ProgressLine } from './progress.js';
import { readTaskOutcomes, type TaskOutcomes } from './task-outcomes.js';

/** Waits for a run to close, drawing a progress line from its status query. */
export async function waitForRun(
  client: Client,
  workflowId: string,
  progress = new ProgressLine(),
): Promise<unknown> {
  const handle = client.workflow.getHandle(workflowId);
  const result = handle.result();
  let settled = false;
  result.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled) {
    try {
      const status = await handle.query(statusQuery);
      progress.update(status.done, status.total, `${status.state}: ${status.stage}`);
    } catch {
      /* not yet answerable */
    }
    await Promise.race([result.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1_000))]);
  }
  progress.finish();
  return result;
}

/** What `mockworld report` shows: the stored run and its model usage by role. */
export interface RunReport {
  readonly runId: string;
  readonly kind: string;
  readonly status: string;
  readonly summary: Record<string, unknown> | null;
  readonly usage: Awaited<ReturnType<typeof usageByRole>>;
  /** A training run's metrics per finished iteration. */
  readonly iterations?: IterationMetrics[];
  /** A synthesis run's tasks: how each ended, where and why. */
  readonly tasks?: TaskOutcomes;
  /** Roles the embedded toy model answered: their figures are labelled as toys. */
  readonly toyRoles?: readonly string[];
}

/** Reads a run's report from PostgreSQL (works after the workflow has closed and been archived). */
export async function readReport(runId: string): Promise<RunReport> {
  const databaseUrl = loadEnvironment().DATABASE_URL;
  const { rows } = await getPool(databaseUrl).query(
    'SELECT run_id, kind, status, summary FROM runs WHERE run_id = $1',
    [runId],
  );
  const row = rows[0];
  if (!row) throw new WorkflowNotFoundError(`No run ${runId} in the database`, runId, undefined);
  return {
    runId,
    kind: row.kind,
    status: row.status,
    summary: row.summary,
    usage: await usageByRole(databaseUrl, runId),
    toyRoles: await queryRolesAnsweredBy(getPool(databaseUrl), runId, EMBEDDED_MODEL_NAME),
    ...(row.kind === 'GrpoTraining' || row.kind === 'SftTraining'
      ? { iterations: await readIterationMetrics(getPool(databaseUrl), runId) }
      : {}),
    ...(row.kind === 'Synthesis' ? { tasks: await readTaskOutcomes(getPool(databaseUrl), runId) } : {}),
  };
}

/** Writes a training run's reward curve to `$MOCKWORLD_HOME/training/<run>/reward.svg`; returns its path. */
export async function writeRewardPlot(
  runId: string,
  iterations: readonly IterationMetrics[],
): Promise<string> {
  const directory = path.join(loadEnvironment().MOCKWORLD_HOME, 'training', datasetDirectoryName(runId));
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, 'reward.svg');
  await writeFile(file, await renderRewardSvg(runId, iterations), 'utf8');
  return file;
}

/**
 * Writes a synthesis run's kept tasks in `formats` to `directory` (default: the run's own export
 * folder; docs/synthesis.md "Export formats").
 */
export async function exportRun(
  runId: string,
  directory: string | undefined,
  formats: readonly ExportFormat[],
): Promise<FormatsExport> {
  const env = loadEnvironment();
  return exportRunFormats(
    getPool(env.DATABASE_URL),
    runId,
    path.resolve(directory ?? path.join(env.MOCKWORLD_HOME, 'datasets', datasetDirectoryName(runId))),
    formats,
  );
}
