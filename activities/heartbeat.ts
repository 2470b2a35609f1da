import { Context } from '@temporalio/activity';

/** Interval of liveness heartbeats once they have started. */
export const HEARTBEAT_INTERVAL_MS = 5_000;

function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called outside an activity (benchmarks, scripts)
  }
}

/**
 * When the first heartbeat is due: half the activity's heartbeat timeout. The server needs one
 * heartbeat per timeout to know the worker lives, and each one it receives costs it a history
 * write; so an activity that ends well within its timeout (most rollouts and model calls) sends
 * none. After the first, the core SDK sends at most one per 0.8 × timeout, whatever the interval
 * here. Without a timeout, heartbeats only carry cancellation: from the first interval on.
 */
export function firstHeartbeatDelayMs(heartbeatTimeoutMs: number | undefined): number {
  return heartbeatTimeoutMs ? Math.max(heartbeatTimeoutMs / 2, 1) : HEARTBEAT_INTERVAL_MS;
}

/** Latest progress of each running activity, sent with its heartbeats. */
const progressOf = new WeakMap<Context, unknown>();
/** Activities whose first heartbeat is past: progress goes out as it comes. */
const heartbeating = new WeakSet<Context>();

/**
 * Records the current activity's progress (shown in the Temporal UI as its heartbeat details):
 * sent at once when the activity already heartbeats, else with its first heartbeat. A no-op
 * outside an activity (scripts, tests).
 */
export function heartbeatProgress(details: unknown): void {
  const context = currentContext();
  if (!context) return;
  progressOf.set(context, details);
  if (heartbeating.has(context)) context.heartbeat(details);
}

/**
 * Wraps every function of an activity object so it heartbeats on a timer while it runs. A model
 * call can take minutes; with liveness heartbeats the server still learns within
 * `heartbeatTimeout` that a worker died, and retries the activity elsewhere instead of waiting
 * for its start-to-close timeout. Cancellation reaches an activity with a heartbeat's answer, so
 * it is noticed from the first heartbeat on.
 */
export function withLivenessHeartbeats<T extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: T,
): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      const context = currentContext();
      let interval: NodeJS.Timeout | undefined;
      const beat = () => context?.heartbeat(progressOf.get(context));
      const first =
        context &&
        setTimeout(() => {
          heartbeating.add(context);
          beat();
          interval = setInterval(beat, HEARTBEAT_INTERVAL_MS);
        }, firstHeartbeatDelayMs(context.info.heartbeatTimeoutMs));
      try {
        return await fn(...args);
      } finally {
        clearTimeout(first);
        clearInterval(interval);
      }
    };
  }
  return wrapped as T;
}
