import { Context } from '@temporalio/activity';

/** Interval of liveness heartbeats; workflows set `heartbeatTimeout` to a few of these. */
export const HEARTBEAT_INTERVAL_MS = 5_000;

function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called outside an activity (benchmarks, scripts)
  }
}

/**
 * Wraps every function of an activity object so it heartbeats on a timer while it runs. A model
 * call can take minutes; with liveness heartbeats the server still learns within
 * `heartbeatTimeout` that a worker died, and retries the activity elsewhere instead of waiting
 * for its start-to-close timeout.
 */
export function withLivenessHeartbeats<T extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: T,
): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      const context = currentContext();
      const timer = context && setInterval(() => context.heartbeat(), HEARTBEAT_INTERVAL_MS);
      try {
        return await fn(...args);
      } finally {
        if (timer) clearInterval(timer);
      }
    };
  }
  return wrapped as T;
}
