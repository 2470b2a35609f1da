import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RunStatus } from '../schemas/run-status.js';
import { described } from './described.js';

/** Stop starting new work; work already running finishes. Idempotent. */
export const pauseSignal = described(
  defineSignal<[]>('pause'),
  'Stop starting new work; work already running finishes. Idempotent.',
);
/** Continue after `pause`. Idempotent. */
export const resumeSignal = described(defineSignal<[]>('resume'), 'Continue after pause. Idempotent.');
/** Sets the run's budget (USD over its priced model calls); a run paused by its budget resumes if the new one is above its spend. */
export const budgetSignal = described(
  defineSignal<[number]>('budget'),
  "Set the run's budget in USD (a number); a run paused at its budget resumes when the new one is above what it spent.",
);
/** Progress of any mockworld run: state, done/total, stage, counts. */
export const statusQuery = described(
  defineQuery<RunStatus>('status'),
  'Progress of the run: state, done of total, current stage and counts.',
);
