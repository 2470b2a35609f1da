/**
 * How cancellation reaches the work an activity is doing (issue 33 point 4). An activity learns
 * that its run was cancelled (or its attempt timed out) from the answer to a heartbeat, as an
 * abort of its cancellation signal; every model call and sandboxed run made inside an activity
 * listens to that signal, so cancelling a run stops its calls and programs within a heartbeat
 * interval and a worker never keeps draining a cancelled run's work.
 *
 * One exception: the worker's own shutdown (SIGTERM) cancels its activities too, and a model call
 * already on the wire is then given {@link SHUTDOWN_CALL_GRACE_MS} to finish: it is paid for, and
 * stored it is read from the ledger by the attempt that runs elsewhere instead of being paid
 * again. No new call starts, and a call that takes longer is cut (a shutdown stays bounded).
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';

/** How long a model call on the wire may still run once its worker shuts down. */
export const SHUTDOWN_CALL_GRACE_MS = 20_000;

/** The running activity's cancellation signal; undefined outside an activity (scripts, tests). */
export function activityCancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

/** Whether an abort's reason is the worker shutting down (the SDK's `WORKER_SHUTDOWN`). */
export function isWorkerShutdown(reason: unknown): boolean {
  return reason instanceof CancelledFailure && reason.message === 'WORKER_SHUTDOWN';
}

/**
 * Runs `work` (a model call) with a signal that follows `source`, except that a worker shutdown
 * coming while it runs cuts it only after {@link SHUTDOWN_CALL_GRACE_MS}; refuses to start once
 * `source` has aborted, whatever the reason.
 */
export async function finishingAtShutdown<T>(
  source: AbortSignal | undefined,
  work: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  if (!source) return work(undefined);
  source.throwIfAborted();
  const controller = new AbortController();
  let grace: NodeJS.Timeout | undefined;
  const forward = () => {
    if (!isWorkerShutdown(source.reason)) return controller.abort(source.reason);
    grace = setTimeout(() => controller.abort(source.reason), SHUTDOWN_CALL_GRACE_MS);
  };
  source.addEventListener('abort', forward, { once: true });
  try {
    return await work(controller.signal);
  } finally {
    source.removeEventListener('abort', forward);
    clearTimeout(grace);
  }
}
