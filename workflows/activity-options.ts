import type { ActivityOptions, RetryPolicy } from '@temporalio/workflow';
import { NON_RETRYABLE_ACTIVITY_ERRORS } from '../activities/errors.js';
// Not from trainer-contract.ts: workflow code evaluates its imports once per workflow run, and that
// module builds zod schemas (measured: ~60 ms per workflow start, most of a synthesis task's).
import { EVAL_ERROR_TYPES, TRAINER_ERROR_TYPES } from '../schemas/worker-error-types.js';

/**
 * Timeouts and retry policies of every activity (docs/bounds-and-retries.md "Retries"): the one module that says how
 * often anything is retried. Every policy is bounded: an
 * error that no one classified (a bug, a library's RangeError) is retried a fixed number of times,
 * then fails its workflow with the error's type and message, which the run records. The
 * non-retryable types come from the error classes themselves (activities/errors.ts, the trainer
 * contract), never retyped here.
 *
 * The bounds are sized to outlast what recovers by itself: a PostgreSQL restart of a minute fails
 * the attempts that start within it (at 0, 1, 3, 7, 15 and 31 s) and the next one succeeds, with
 * attempts left for a worker SIGKILL or two (each one costs the attempt it cut off). What is not
 * bounded is the wait of a scheduled attempt for a worker to poll it (no schedule-to-start
 * timeout): with every worker of a queue down, work waits for one to come back, and a user who
 * does not want that cancels the run.
 */
const SECOND = 1_000;
const MINUTE = 60 * SECOND;

/** Waits doubling from 1 s to `maximumInterval`, at most `maximumAttempts` attempts. */
function boundedRetry(
  maximumAttempts: number,
  maximumInterval: number,
  nonRetryableErrorTypes: readonly string[],
): RetryPolicy {
  return {
    initialInterval: SECOND,
    backoffCoefficient: 2,
    maximumInterval,
    maximumAttempts,
    nonRetryableErrorTypes: [...nonRetryableErrorTypes],
  };
}

/**
 * Activities that call models, run episodes or move data (most of them). 25 attempts, the waits
 * between them doubling from 1 s to at most 1 minute: about 19 minutes of backoff, plus each
 * attempt's own time. A model endpoint that refuses connections costs each attempt its own HTTP
 * retries (activities/llm/upstream.ts, 7 tries over about 30 s), so the activity fails with
 * ModelRetriesExhaustedError, naming the endpoint, after about half an hour of it down. Bounded
 * rather than waiting for an operator, because the same policy also retries errors no one
 * classified: a synthesis task fails and the run goes on, counting it; a GRPO group
 * or a study stream fails its run, which records the cause (started again once the endpoint is
 * back, it finds the answers already paid for in the call cache).
 */
export const LONG_RETRY = boundedRetry(25, MINUTE, NON_RETRYABLE_ACTIVITY_ERRORS);

/**
 * Activities heartbeat from half the heartbeat timeout on (activities/heartbeat.ts), so a killed
 * worker is noticed within `heartbeatTimeout` and its work retried elsewhere; start-to-close only
 * bounds a call that is alive but stuck.
 */
export const LONG_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '20 seconds',
  retry: LONG_RETRY,
};

/**
 * Short bookkeeping activities (run rows): a quick retry beats a long wait. 12 attempts, the waits
 * doubling from 1 s to at most 30 s: about 3.5 minutes of backoff.
 */
export const SHORT_RETRY = boundedRetry(12, 30 * SECOND, NON_RETRYABLE_ACTIVITY_ERRORS);

/** Options of the short bookkeeping activities; a killed worker's attempt times out within a minute. */
export const SHORT_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: SHORT_RETRY,
};

/**
 * The Python trainer's activities (workflows/trainer.ts). Its own failure types a retry cannot fix
 * are the contract's; anything else (a killed trainer, CUDA out of memory) is retried, and its
 * exactly-once bookkeeping makes a retried step that was already applied a no-op. 10 attempts, the waits doubling from 1 s to
 * at most 1 minute: about 4 minutes of backoff, on top of the heartbeat timeout each killed attempt costs.
 */
export const TRAINER_RETRY = boundedRetry(10, MINUTE, TRAINER_ERROR_TYPES);

/** Trainer steps are long and heartbeat (the task queue is the spec's `gpuTaskQueue`). */
export const TRAINER_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '4 hours',
  heartbeatTimeout: '1 minute',
  retry: TRAINER_RETRY,
};

/**
 * The Python evaluation worker's trials (workflows/evaluation-activities.ts). A trial whose row is
 * stored is never run again, so retries are safe; an unreachable model endpoint
 * (EvalModelUnreachable) is retried for about 25 minutes of backoff before the run fails naming
 * it. 30 attempts, the waits doubling from 1 s to at most 1 minute.
 */
export const EVAL_TRIAL_RETRY = boundedRetry(30, MINUTE, EVAL_ERROR_TYPES);

/** The evaluation worker's listing and summary: as {@link SHORT_RETRY}, with its own types. */
export const EVAL_SHORT_RETRY = boundedRetry(12, 30 * SECOND, EVAL_ERROR_TYPES);

/**
 * Weight sync (workflows/policy-serving.ts): a stale replica (StalePolicyError) is pushed again a
 * few times, then the run fails before sampling rollouts from it. 5 attempts, at most 30 s apart.
 */
export const WEIGHT_SYNC_RETRY = boundedRetry(5, 30 * SECOND, NON_RETRYABLE_ACTIVITY_ERRORS);

/** `policy` with other non-retryable types (an area that adds its own). */
export function withNonRetryable(policy: RetryPolicy, types: readonly string[]): RetryPolicy {
  return { ...policy, nonRetryableErrorTypes: [...types] };
}
