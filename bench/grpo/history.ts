/** What the GRPO benchmark reads from a run's histories: the parent chain, every group child, phase times. */
import type { Client } from '@temporalio/client';
import { eventMs, scanAll, scanChain, type HistoryEvent } from '../measure/history.js';

/** The parent's runs (continue-as-new chain) and every GrpoGroup child of its iteration 0. */
export async function scanRun(
  client: Client,
  workflowId: string,
  firstRunId: string,
  taskIds: readonly string[],
) {
  const parent = await scanChain(client, workflowId, firstRunId);
  const children = await scanAll(
    client,
    taskIds.map((taskId) => `${workflowId}-it0-${taskId}`),
    16,
  );
  return { parent, children };
}

/** Server times of the rollout phase: first child start initiated → last child completed. */
export function rolloutPhase(parent: HistoryEvent[]) {
  const initiated = parent.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).map(eventMs);
  const completed = parent.filter((e) => e.childWorkflowExecutionCompletedEventAttributes).map(eventMs);
  return {
    rolloutMs: Math.max(...completed) - Math.min(...initiated),
    runMs: eventMs(parent[parent.length - 1]!) - eventMs(parent[0]!),
    trainerStepMs: activitySpan(parent, 'trainer.grpoStep'),
  };
}

/** Scheduled → completed of the first activity of `type`, ms (0 if it did not complete). */
function activitySpan(events: HistoryEvent[], type: string): number {
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);
  if (!scheduled) return 0;
  const done = events.find(
    (e) =>
      String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled.eventId),
  );
  return done ? eventMs(done) - eventMs(scheduled) : 0;
}
