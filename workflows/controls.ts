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
/** Progress of any mockworld run: state, done/total, stage, counts. */
export const statusQuery = described(
  defineQuery<RunStatus>('status'),
  'Progress of the run: state, done of total, current stage and counts.',
);
