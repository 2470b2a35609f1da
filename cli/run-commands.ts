import { ServiceError, WorkflowNotFoundError, type Client, type QueryDefinition } from '@temporalio/client';
import { getPool } from '../activities/store/db.js';
import { readIterationMetrics, type IterationMetrics } from '../activities/training/metrics.js';
import { renderRewardSvg } from '../activities/training/reward-plot.js';
import { usageByRole } from '../activities/llm/index.js';
import { loadEnvironment } from '../schemas/environment.js';
import type { RunStatus } from '../schemas/run-status.js';
import type { AnySpec } from '../schemas/specs.js';
import { pauseSignal, resumeSignal, statusQuery } from '../workflows/controls.js';
import { MockworldProgress, MockworldState } from '../workflows/search-attributes.js';
import { taskStageQuery } from '../workflows/synthesis-controls.js';
import { datasetDirectoryName, exportRunDataset, type ExportResult } from '../activities/synthesis/export.js';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ProgressLine } from './progress.js';

/** A workflow id users can read: kind, name, UTC start time. */
export function defaultWorkflowId(spec: AnySpec, now = new Date()): string {
  const name = ('name' in spec && typeof spec.name === 'string' ? spec.name : spec.kind).replace(
    /[^A-Za-z0-9_.-]/g,
    '-',
  );
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  return `${spec.kind.toLowerCase()}-${name}-${stamp}`;
}

/** Starts the workflow of a validated spec: workflow type = kind, the spec is the only argument. */
export async function startRun(client: Client, spec: AnySpec, workflowId?: string): Promise<string> {
  const id = workflowId ?? defaultWorkflowId(spec);
  await client.workflow.start(spec.kind, {
    args: [spec],
    workflowId: id,
    taskQueue: loadEnvironment().MOCKWORLD_TASK_QUEUE,
  });
  return id;
}

/** Temporal's view and the run's own status, merged for `mockworld status`. */
export interface RunOverview {
  readonly workflowId: string;
  readonly type: string;
  readonly temporalStatus: string;
  readonly started: string;
  readonly closed?: string;
  /** The status query's answer; unset when no worker answered it. */
  readonly status?: RunStatus;
  /** State and progress fraction (0..1) as last recorded in the run's search attributes. */
  readonly recorded: { readonly state?: string; readonly progress?: number };
  /** Why `status` is unset. */
  readonly statusError?: string;
}

/** How long a query may wait for a worker to answer it. */
const QUERY_DEADLINE_MS = 5_000;
/**
 * gRPC codes of a query nobody answered: CANCELLED and DEADLINE_EXCEEDED (our deadline) and
 * FAILED_PRECONDITION (the server has seen no poller on the task queue lately).
 */
const NO_ANSWER_CODES = new Set([1, 4, 9]);

/**
 * Asks a run a query. Queries are answered by a worker (a closed run's too), so without one the
 * error says so and what to do, after at most 5 s.
 */
export async function queryRun<R, A extends unknown[]>(
  client: Client,
  workflowId: string,
  query: QueryDefinition<R, A>,
  ...args: A
): Promise<R> {
  try {
    return await client.withDeadline(Date.now() + QUERY_DEADLINE_MS, () =>
      client.workflow.getHandle(workflowId).query(query, ...args),
    );
  } catch (error) {
    // Others (not found, no access, the query's own refusal) say what they are already.
    const code =
      error instanceof ServiceError ? (error.cause as { code?: number } | undefined)?.code : undefined;
    if (code === undefined || !NO_ANSWER_CODES.has(code)) throw error;
    const { taskQueue } = await client.workflow.getHandle(workflowId).describe();
    throw new Error(
      `no worker answered the ${query.name} query of ${workflowId} within ${QUERY_DEADLINE_MS / 1000} s ` +
        `(${(error as ServiceError).cause!.message}): no worker polls task queue ${taskQueue}, or it is busy; ` +
        `start one with \`mockworld worker --task-queue ${taskQueue}\``,
    );
  }
}

/**
 * Describes a run. The status query needs a worker; without one (or when it does not answer in
 * time) the state and progress the run last recorded in its search attributes stand in.
 */
export async function describeRun(client: Client, workflowId: string): Promise<RunOverview> {
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe();
  const attributes = description.typedSearchAttributes;
  let status: RunStatus | undefined;
  let statusError: string | undefined;
  try {
    status = await queryRun(client, workflowId, statusQuery);
  } catch (error) {
    // No worker polling, or the run failed before it set up its handlers.
    statusError = error instanceof Error ? error.message : String(error);
  }
  return {
    workflowId,
    type: description.type,
    temporalStatus: description.status.name,
    started: description.startTime.toISOString(),
    closed: description.closeTime?.toISOString(),
    status,
    recorded: { state: attributes.get(MockworldState), progress: attributes.get(MockworldProgress) },
    statusError,
  };
}

/** Sends a control signal (`pause` or `resume`). */
export async function signalRun(
  client: Client,
  workflowId: string,
  which: 'pause' | 'resume',
): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(which === 'pause' ? pauseSignal : resumeSignal);
}

/** Requests cancellation: the run stops at its next safe point and records `cancelled`. */
export async function cancelRun(client: Client, workflowId: string): Promise<void> {
  await client.workflow.getHandle(workflowId).cancel();
}

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
    ...(row.kind === 'GrpoTraining'
      ? { iterations: await readIterationMetrics(getPool(databaseUrl), runId) }
      : {}),
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
  await writeFile(file, renderRewardSvg(runId, iterations), 'utf8');
  return file;
}

/** The stage of task `index` of a synthesis run (answered by the run's workflow). */
export async function taskStage(client: Client, workflowId: string, index: number): Promise<string> {
  if (!Number.isInteger(index) || index < 0)
    throw new Error(`--task must be a task index (0, 1, ...), got ${index}`);
  return queryRun(client, workflowId, taskStageQuery, index);
}

/** Writes a synthesis run's kept tasks to `directory` (default: the run's own export folder). */
export async function exportRun(runId: string, directory?: string): Promise<ExportResult> {
  const env = loadEnvironment();
  return exportRunDataset(
    getPool(env.DATABASE_URL),
    runId,
    path.resolve(directory ?? path.join(env.MOCKWORLD_HOME, 'datasets', datasetDirectoryName(runId))),
  );
}
