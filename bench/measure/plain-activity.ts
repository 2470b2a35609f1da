import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';

/** The timeouts an activity's context reports (what the workflow would schedule it with). */
export interface ActivityTimeouts {
  readonly heartbeatTimeoutMs: number;
  readonly startToCloseTimeoutMs: number;
}

/**
 * For the plain path of a benchmark (the same activities without Temporal): runs each call inside
 * a fresh mock activity context, as the worker gives each attempt one, so heartbeats and
 * `Context.current()` work unchanged.
 */
export function plainActivityRunner(timeouts: ActivityTimeouts) {
  return <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>, ...args: A): Promise<R> => {
    const env = new MockActivityEnvironment(
      { activityType: name, ...timeouts },
      { logger: new DefaultLogger('WARN') },
    );
    return env.run(fn, ...args);
  };
}
