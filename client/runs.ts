import { ServiceError, type Client, type QueryDefinition } from '@temporalio/client';
import proto from '@temporalio/proto';
import { pascalCaseOf } from '../schemas/enum-names.js';
import { loadEnvironment } from '../schemas/environment.js';
import { viewerRunUrl } from '../schemas/run-records.js';
import type { RunStatus } from '../schemas/run-status.js';
import type { AnySpec } from '../schemas/specs.js';
import { budgetSignal, pauseSignal, resumeSignal, statusQuery } from '../workflows/controls.js';
import { MockworldProgress, MockworldState } from '../workflows/search-attributes.js';
import { taskStageQuery } from '../workflows/synthesis-controls.js';

// A CommonJS package: Node's ESM loader sees only its default export.
const { temporal } = proto;

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
export async function startRun(
  client: Client,
  spec: AnySpec,
  workflowId?: string,
  taskQueue = loadEnvironment().MOCKWORLD_TASK_QUEUE,
): Promise<string> {
  const id = workflowId ?? defaultWorkflowId(spec);
  // Shown in the Temporal UI's header of the run (user metadata): what it is and where its data is.
  const viewer = viewerRunUrl(loadEnvironment(), id);
  await client.workflow.start(spec.kind, {
    args: [spec],
    workflowId: id,
    taskQueue,
    staticSummary: `mockworld ${spec.kind}${'name' in spec && spec.name ? ` "${spec.name}"` : ''}: ${viewer}`,
    staticDetails: `Tasks, transcripts, curves and fits of this run: [mockworld viewer](${viewer}) (\`mockworld view\`)`,
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
    const failing = await failingWorkflowTask(client, workflowId);
    const why = failing
      ? `a worker polls task queue ${taskQueue}, but the run's workflow task keeps failing ` +
        `(attempt ${failing.attempt}): ${failing.cause}: ${failing.message}` +
        (failing.cause === 'BadSearchAttributes' ? `; ${SEARCH_ATTRIBUTES_FIX}` : '')
      : `no worker polls task queue ${taskQueue}, or it is busy; ` +
        `start one with \`mockworld worker --task-queue ${taskQueue}\``;
    throw new Error(
      `no worker answered the ${query.name} query of ${workflowId} within ${QUERY_DEADLINE_MS / 1000} s ` +
        `(${(error as ServiceError).cause!.message}): ${why}`,
    );
  }
}

const SEARCH_ATTRIBUTES_FIX =
  "the namespace lacks mockworld's search attributes: run the worker with MockworldPlugin (it " +
  'registers them at start) or `mockworld stack up`, or add them with `temporal operator ' +
  'search-attribute create` (the worker then retries the task by itself)';

/** Why a run's workflow task keeps failing, from the last failure in its history. */
export interface FailingWorkflowTask {
  readonly attempt: number;
  /** The server's cause, e.g. `BadSearchAttributes`, `WorkflowWorkerUnhandledFailure`. */
  readonly cause: string;
  readonly message: string;
}

/**
 * The run's workflow task failure, when its pending workflow task is past its first attempt: the
 * newest WorkflowTaskFailed event, read from the end of the history (a few events, however long
 * the run). Undefined when the task is not failing.
 */
export async function failingWorkflowTask(
  client: Client,
  workflowId: string,
): Promise<FailingWorkflowTask | undefined> {
  const { raw } = await client.workflow.getHandle(workflowId).describe();
  const attempt = raw.pendingWorkflowTask?.attempt ?? 0;
  if (attempt <= 1) return undefined;
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 50,
  });
  const failed = history?.events?.find(
    (e) => e.workflowTaskFailedEventAttributes,
  )?.workflowTaskFailedEventAttributes;
  if (!failed) return undefined;
  const cause = temporal.api.enums.v1.WorkflowTaskFailedCause[failed.cause ?? 0] ?? String(failed.cause);
  return {
    attempt,
    cause: pascalCaseOf(cause.replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, '')),
    message: failed.failure?.message ?? '(no message)',
  };
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

/** Sets a run's budget in USD; a run paused at its budget resumes when the new one is above its spend. */
export async function setBudget(client: Client, workflowId: string, usd: number): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(budgetSignal, usd);
}

/** Requests cancellation: the run stops at its next safe point and records `cancelled`. */
export async function cancelRun(client: Client, workflowId: string): Promise<void> {
  await client.workflow.getHandle(workflowId).cancel();
}

/** The stage of task `index` of a synthesis run (answered by the run's workflow). */
export async function taskStage(client: Client, workflowId: string, index: number): Promise<string> {
  if (!Number.isInteger(index) || index < 0)
    throw new Error(`--task must be a task index (0, 1, ...), got ${index}`);
  return queryRun(client, workflowId, taskStageQuery, index);
}
