/**
 * What the chaos harness reads from Temporal while faults land: the runs in progress, the
 * activities each has started (on which worker, which attempt), and how far their histories got.
 * Every call has a short deadline and a failure is an answer ("unknown now"), since the server may
 * be the thing that was just killed.
 */
import type { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';

// A CommonJS package: Node's ESM loader sees only its default export.
const { temporal } = proto;
const { PendingActivityState, WorkflowExecutionStatus, EventType, TaskQueueType, TaskQueueKind } =
  temporal.api.enums.v1;

/** An activity a run has scheduled or started and not finished. */
export interface PendingActivity {
  readonly workflowId: string;
  readonly activityId: string;
  readonly type: string;
  readonly started: boolean;
  readonly attempt: number;
  readonly identity: string;
  /** Why the attempt before this one failed, if one did. */
  readonly lastFailure?: string;
}

/** A workflow as `describe` sees it now. */
export interface WorkflowView {
  readonly workflowId: string;
  readonly running: boolean;
  readonly historyLength: number;
  readonly pending: readonly PendingActivity[];
}

export class TemporalObserver {
  constructor(
    private readonly connection: Connection,
    private readonly client: Client,
    readonly namespace = 'default',
  ) {}

  private inFlight = 0;
  private closed = false;

  /** Runs one call to the server with a deadline, counted so that `close` can wait for it. */
  deadline<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the harness is stopping'));
    this.inFlight++;
    return this.connection.withDeadline(Date.now() + ms, fn).finally(() => this.inFlight--);
  }

  /**
   * Refuses new calls, waits (bounded) for the calls in flight, then closes the connection: closing
   * it under a call that the client is about to retry throws from a timer and kills the process.
   */
  async close(timeoutMs = 35_000): Promise<void> {
    this.closed = true;
    const deadline = Date.now() + timeoutMs;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await this.connection.close();
  }

  /** Workflow ids of every running execution on the server (all of them are the harness's). */
  async running(timeoutMs = 3_000): Promise<string[]> {
    const ids: string[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await this.deadline(timeoutMs, () =>
        this.connection.workflowService.listWorkflowExecutions({
          namespace: this.namespace,
          query: 'ExecutionStatus="Running"',
          pageSize: 1000,
          nextPageToken,
        }),
      );
      for (const e of page.executions ?? []) if (e.execution?.workflowId) ids.push(e.execution.workflowId);
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return [...new Set(ids)];
  }

  /** The latest run of `workflowId`; undefined when the server cannot say now. */
  async describe(workflowId: string, timeoutMs = 3_000): Promise<WorkflowView | undefined> {
    try {
      const d = await this.deadline(timeoutMs, () =>
        this.connection.workflowService.describeWorkflowExecution({
          namespace: this.namespace,
          execution: { workflowId },
        }),
      );
      const info = d.workflowExecutionInfo;
      return {
        workflowId,
        running: info?.status === WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
        historyLength: Number(info?.historyLength ?? 0),
        pending: (d.pendingActivities ?? []).map((a) => ({
          workflowId,
          activityId: a.activityId ?? '',
          type: a.activityType?.name ?? '',
          started: a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
          attempt: a.attempt ?? 0,
          identity: a.lastWorkerIdentity ?? '',
          ...(a.lastFailure?.message ? { lastFailure: a.lastFailure.message } : {}),
        })),
      };
    } catch (error) {
      if ((error as { code?: number }).code === 5) {
        return { workflowId, running: false, historyLength: 0, pending: [] }; // NOT_FOUND: never started or gone
      }
      return undefined;
    }
  }

  /** Describes every running workflow; undefined when the server cannot say now. */
  async snapshot(timeoutMs = 3_000): Promise<WorkflowView[] | undefined> {
    let ids: string[];
    try {
      ids = await this.running(timeoutMs);
    } catch {
      return undefined;
    }
    const views = await mapLimit(ids, 8, (id) => this.describe(id, timeoutMs));
    return views.some((v) => v === undefined) ? undefined : (views as WorkflowView[]);
  }

  /** The status name of the latest run of `workflowId` (COMPLETED, FAILED, ...), NOT_FOUND, or undefined when unknown. */
  async status(workflowId: string, timeoutMs = 10_000): Promise<string | undefined> {
    try {
      const d = await this.deadline(timeoutMs, () =>
        this.connection.workflowService.describeWorkflowExecution({
          namespace: this.namespace,
          execution: { workflowId },
        }),
      );
      const status = d.workflowExecutionInfo?.status ?? 0;
      return WorkflowExecutionStatus[status]?.replace('WORKFLOW_EXECUTION_STATUS_', '');
    } catch (error) {
      return (error as { code?: number }).code === 5 ? 'NOT_FOUND' : undefined;
    }
  }

  /** Results of every completed activity of type `type` in the history of `workflowId` (latest run). */
  async activityResults(workflowId: string, type: string): Promise<unknown[]> {
    const history = await this.deadline(30_000, () =>
      this.client.workflow.getHandle(workflowId).fetchHistory(),
    );
    const events = history.events ?? [];
    const scheduled = new Map<number, string>();
    const results: unknown[] = [];
    for (const e of events) {
      if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
        scheduled.set(Number(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
      }
      if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const attributes = e.activityTaskCompletedEventAttributes!;
        if (scheduled.get(Number(attributes.scheduledEventId)) !== type) continue;
        const payload = attributes.result?.payloads?.[0];
        results.push(
          payload ? this.client.options.loadedDataConverter.payloadConverter.fromPayload(payload) : undefined,
        );
      }
    }
    return results;
  }

  /**
   * Every activity attempt after the first, over all workflows on the server (closed ones too),
   * with the failure of the attempt before: a kill shows as heartbeat timeouts, a database restart
   * as failures; a heartbeat timeout with no kill means the server gave up on a live worker.
   */
  async activityRetries(): Promise<ActivityRetry[]> {
    const ids: string[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await this.deadline(10_000, () =>
        this.connection.workflowService.listWorkflowExecutions({
          namespace: this.namespace,
          pageSize: 1000,
          nextPageToken,
        }),
      );
      for (const e of page.executions ?? []) if (e.execution?.workflowId) ids.push(e.execution.workflowId);
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    const { TimeoutType } = temporal.api.enums.v1;
    const perWorkflow = await mapLimit([...new Set(ids)], 8, async (workflowId) => {
      const history = await this.deadline(30_000, () =>
        this.client.workflow.getHandle(workflowId).fetchHistory(),
      );
      const events = history.events ?? [];
      const scheduled = new Map<number, string>();
      const retries: ActivityRetry[] = [];
      for (const e of events) {
        if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
          scheduled.set(Number(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
        }
        const started = e.activityTaskStartedEventAttributes;
        if (
          e.eventType !== EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED ||
          !started ||
          (started.attempt ?? 1) <= 1
        )
          continue;
        const failure = started.lastFailure;
        const timeout = failure?.timeoutFailureInfo?.timeoutType;
        retries.push({
          workflowId,
          type: scheduled.get(Number(started.scheduledEventId)) ?? '',
          attempt: started.attempt ?? 0,
          startedAt: Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6,
          cause:
            timeout !== undefined && timeout !== null
              ? (TimeoutType[timeout] ?? String(timeout))
                  .replace('TIMEOUT_TYPE_', '')
                  .toLowerCase()
                  .replaceAll('_', '-') + '-timeout'
              : `failure: ${failureText(failure).slice(0, 160)}`,
        });
      }
      return retries;
    });
    return perWorkflow.flat();
  }

  /** True when a worker with `identity` has polled `taskQueue` lately (it is serving). */
  async polling(taskQueue: string, identity: string, kind: 'workflow' | 'activity'): Promise<boolean> {
    try {
      const answer = await this.deadline(3_000, () =>
        this.connection.workflowService.describeTaskQueue({
          namespace: this.namespace,
          taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType:
            kind === 'workflow'
              ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
              : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        }),
      );
      return (answer.pollers ?? []).some((p) => p.identity === identity);
    } catch {
      return false;
    }
  }

  /**
   * True when the history of `workflowId` has an event recorded at or after `since` (ms since epoch)
   * that records finished work (an activity or child workflow completed, or the workflow itself);
   * undefined when unknown.
   */
  async completedWorkSince(workflowId: string, since: number): Promise<boolean | undefined> {
    try {
      const handle = this.client.workflow.getHandle(workflowId);
      const history = await this.deadline(5_000, () => handle.fetchHistory());
      return (history.events ?? []).some(
        (e) =>
          Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6 >= since &&
          (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED ||
            e.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED ||
            e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED),
      );
    } catch {
      return undefined;
    }
  }
}

/**
 * A failure's message; with its cause's when the server replaced the message (a failure over the
 * 4 KB Temporal keeps of a pending activity's last failure is stored as "Failure exceeds size
 * limit." with the original message as its cause).
 */
function failureText(
  failure: { message?: string | null; cause?: { message?: string | null } | null } | null | undefined,
): string {
  const message = failure?.message || '';
  const cause = failure?.cause?.message || '';
  if (!message) return cause || 'unknown';
  return /exceeds size limit/i.test(message) && cause ? `${message} ${cause}` : message;
}

/** An activity attempt that started after an earlier attempt failed, and why that one failed. */
export interface ActivityRetry {
  readonly workflowId: string;
  readonly type: string;
  readonly attempt: number;
  /** When the retry started (ms since epoch); the history records it when the activity closes. */
  readonly startedAt: number;
  /** 'heartbeat-timeout', 'start-to-close-timeout', ... or 'failure: <message>'. */
  readonly cause: string;
}

/** When every activity of `affected` has finished or started again (a higher attempt); undefined at `deadline`. */
export async function activitiesResumed(
  observer: TemporalObserver,
  affected: readonly PendingActivity[],
  deadline: () => number,
): Promise<number | undefined> {
  let remaining = [...affected];
  while (remaining.length > 0) {
    if (Date.now() > deadline()) return undefined;
    const ids = [...new Set(remaining.map((a) => a.workflowId))];
    const views = new Map(
      await Promise.all(ids.map(async (id) => [id, await observer.describe(id)] as const)),
    );
    remaining = remaining.filter((a) => {
      const view = views.get(a.workflowId);
      if (!view) return true; // unknown now
      if (!view.running) return false;
      const now = view.pending.find((p) => p.activityId === a.activityId);
      if (!now) return false; // finished
      return !(now.started && (now.attempt > a.attempt || now.identity !== a.identity));
    });
    if (remaining.length > 0) await new Promise((r) => setTimeout(r, 500));
  }
  return Date.now();
}

/** `fn` over `items`, at most `limit` at once, results in order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}
