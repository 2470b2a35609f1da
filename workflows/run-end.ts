import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.js';
import { SHORT_ACTIVITY } from './activity-options.js';
import type { RunControl } from './run-control.js';

const { recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);

/** Characters of the failure message kept in the run's summary. */
const MAX_FAILURE_CHARS = 2_000;

/**
 * Records how a pipeline ended on `error`, cancelled or failed, in its `MockworldState` search
 * attribute and its `runs` row (so UI filters and `mockworld report` stop showing it running),
 * then rethrows it.
 */
export async function endRunOnError(control: RunControl, runId: string, error: unknown): Promise<never> {
  const state = isCancellation(error) ? 'cancelled' : 'failed';
  control.setState(state);
  const summary = state === 'failed' ? { failure: messageOf(error).slice(0, MAX_FAILURE_CHARS) } : undefined;
  await CancellationScope.nonCancellable(() => recordRunFinish({ runId, state, summary }));
  throw error;
}

/** The innermost cause's message: a child's or an activity's failure says what went wrong. */
function messageOf(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(error);
}
