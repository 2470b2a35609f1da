/**
 * What a benchmark reads from a finished workflow's history: events, bytes, the largest payload
 * and event (the claim-check targets of DESIGN.md), activity timings as the server saw them,
 * retries and failures.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

// A CommonJS package: Node's ESM loader sees only its default export (as in deploy/search-attributes.ts).
const { temporal } = proto;

export type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

export function eventTypeName(event: HistoryEvent): string {
  const type = event.eventType ?? 0;
  return (temporal.api.enums.v1.EventType[type] ?? String(type)).replace(/^EVENT_TYPE_/, '');
}

/** The event's server time in ms since the epoch. */
export function eventMs(event: HistoryEvent): number {
  const t = event.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;
}

export function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

export function mergeCounts(all: Array<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const counts of all) for (const [k, n] of Object.entries(counts)) out[k] = (out[k] ?? 0) + n;
  return out;
}

/** Every Payload inside a decoded proto object (recursively: inputs, results, headers, memos, search attributes). */
function* payloadsIn(
  value: unknown,
  seen = new Set<unknown>(),
): Generator<proto.temporal.api.common.v1.IPayload> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || seen.has(value)) return;
  seen.add(value);
  const record = value as Record<string, unknown>;
  if (record['data'] instanceof Uint8Array && 'metadata' in record) {
    yield record as proto.temporal.api.common.v1.IPayload;
    return;
  }
  for (const child of Array.isArray(value) ? value : Object.values(record)) yield* payloadsIn(child, seen);
}

/** The largest encoded payload or event of a history, and where it was. */
export interface Largest {
  readonly bytes: number;
  readonly eventType: string;
  readonly workflowId: string;
}

export interface ActivityTiming {
  /** Scheduled → started (waiting in the task queue and the worker's slots), ms. */
  readonly scheduleToStartMs: number[];
  /** Started → completed (the activity itself, as the server saw it), ms. */
  readonly runMs: number[];
}

export interface HistoryScan {
  readonly workflowId: string;
  readonly events: number;
  readonly bytes: number;
  readonly largestPayload: Largest;
  readonly largestEvent: Largest;
  /** The run id this run continued as, if it did. */
  readonly continuedAs?: string;
  readonly events_: HistoryEvent[];
  readonly activities: Record<string, ActivityTiming>;
  /** Workflow tasks completed in this run. */
  readonly workflowTasks: number;
  /** Activity attempts after the first (ACTIVITY_TASK_STARTED with attempt > 1), failures and timeouts. */
  readonly retries: number;
  /** Failed or timed-out activity and workflow tasks, by event type. */
  readonly failures: Record<string, number>;
}

export async function scanHistory(client: Client, workflowId: string, runId?: string): Promise<HistoryScan> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  let largestPayload: Largest = { bytes: 0, eventType: '', workflowId };
  let largestEvent: Largest = { bytes: 0, eventType: '', workflowId };
  const scheduled = new Map<string, { type: string; at: number }>();
  const started = new Map<string, number>();
  const activities: Record<string, ActivityTiming> = {};
  for (const event of events) {
    const eventBytes = temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    if (eventBytes > largestEvent.bytes)
      largestEvent = { bytes: eventBytes, eventType: eventTypeName(event), workflowId };
    for (const payload of payloadsIn(event)) {
      const bytes = temporal.api.common.v1.Payload.encode(payload).finish().length;
      if (bytes > largestPayload.bytes)
        largestPayload = { bytes, eventType: eventTypeName(event), workflowId };
    }
    const id = String(event.eventId);
    const attrs = event.activityTaskScheduledEventAttributes;
    if (attrs) scheduled.set(id, { type: attrs.activityType?.name ?? '?', at: eventMs(event) });
    const s = event.activityTaskStartedEventAttributes;
    if (s) {
      const sched = scheduled.get(String(s.scheduledEventId));
      if (sched) {
        (activities[sched.type] ??= { scheduleToStartMs: [], runMs: [] }).scheduleToStartMs.push(
          eventMs(event) - sched.at,
        );
        started.set(String(s.scheduledEventId), eventMs(event));
      }
    }
    const c = event.activityTaskCompletedEventAttributes;
    if (c) {
      const sched = scheduled.get(String(c.scheduledEventId));
      const at = started.get(String(c.scheduledEventId));
      if (sched && at !== undefined) activities[sched.type]!.runMs.push(eventMs(event) - at);
    }
  }
  const last = events[events.length - 1];
  return {
    workflowId,
    events: events.length,
    bytes: temporal.api.history.v1.History.encode({ events }).finish().length,
    largestPayload,
    largestEvent,
    continuedAs: last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined,
    events_: events,
    activities,
    workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
    retries: events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1).length,
    failures: countBy(
      events
        .filter(
          (e) =>
            e.activityTaskFailedEventAttributes ||
            e.activityTaskTimedOutEventAttributes ||
            e.workflowTaskFailedEventAttributes ||
            e.workflowTaskTimedOutEventAttributes,
        )
        .map(eventTypeName),
    ),
  };
}

/** Every run of a continue-as-new chain, first to last. */
export async function scanChain(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<HistoryScan[]> {
  const runs: HistoryScan[] = [];
  for (let runId: string | undefined = firstRunId; runId;) {
    const scan = await scanHistory(client, workflowId, runId);
    runs.push(scan);
    runId = scan.continuedAs;
  }
  return runs;
}

/** The scans of `workflowIds` (latest runs), `batch` histories fetched at a time. */
export async function scanAll(
  client: Client,
  workflowIds: readonly string[],
  batch: number,
): Promise<HistoryScan[]> {
  const scans: HistoryScan[] = [];
  for (let i = 0; i < workflowIds.length; i += batch)
    scans.push(...(await Promise.all(workflowIds.slice(i, i + batch).map((id) => scanHistory(client, id)))));
  return scans;
}

/** The one with the most bytes. */
export const largest = (all: Largest[]): Largest => all.reduce((a, b) => (b.bytes > a.bytes ? b : a));

export interface Dist {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function dist(values: number[]): Dist {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return {
    count: sorted.length,
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

/** Per activity type over many histories: schedule→start and run time distributions. */
export function activityDists(scans: HistoryScan[]) {
  const merged: Record<string, { scheduleToStartMs: Dist; runMs: Dist }> = {};
  const types = new Set(scans.flatMap((s) => Object.keys(s.activities)));
  for (const type of types) {
    const all = scans.map((s) => s.activities[type]).filter((a): a is ActivityTiming => !!a);
    merged[type] = {
      scheduleToStartMs: dist(all.flatMap((a) => a.scheduleToStartMs)),
      runMs: dist(all.flatMap((a) => a.runMs)),
    };
  }
  return merged;
}
