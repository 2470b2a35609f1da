import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RunStatus } from '../schemas/run-status.js';

/** Stop starting new work; work already running finishes. Idempotent. */
export const pauseSignal = defineSignal<[]>('pause');
/** Continue after `pause`. Idempotent. */
export const resumeSignal = defineSignal<[]>('resume');
/** Progress of any mockworld run: state, done/total, stage, counts. */
export const statusQuery = defineQuery<RunStatus>('status');
