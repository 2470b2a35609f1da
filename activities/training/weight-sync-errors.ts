/**
 * Errors of the weight-sync activity (weight-sync.ts). Pure: workflow code may import this module.
 * Each declares its Temporal failure `type` (its `name`) and whether another attempt can help
 * (activities/error-class.ts). The non-retryable ones are thrown wrapped in a non-retryable
 * ApplicationFailure where they happen (weight-sync.ts), so no retry policy needs to list them.
 */
import type { ErrorClass } from '../error-class.js';

/**
 * Thrown when a replica still serves another version than the step just synced once the verify
 * timeout has passed (it accepted the load and did not apply it, restarted from an old path, or
 * went to sleep). Retryable: the next attempt pushes the step again. When the attempts run out the
 * run fails here, before any rollout of the next iteration is sampled from a stale policy.
 */
export class StalePolicyError extends Error {
  static readonly type = 'StalePolicyError';
  static readonly retryable = true;
  override readonly name = StalePolicyError.type;
  constructor(
    readonly replica: string,
    /** What the replica should report. */
    readonly expected: string,
    /** What it reported last (undefined: nothing readable). */
    readonly served: string | undefined,
  ) {
    super(
      `replica ${replica} serves ${served ?? 'nothing readable'}, not ${expected}: ` +
        'refusing to sample rollouts from a stale policy',
    );
  }
}

/**
 * Thrown when a replica's admin API keeps failing (refused connections, 5xx, 429) through every
 * try of one activity attempt. Retryable: the activity's retry policy tries again later.
 */
export class ReplicaUnavailableError extends Error {
  static readonly type = 'ReplicaUnavailableError';
  static readonly retryable = true;
  override readonly name = ReplicaUnavailableError.type;
  constructor(
    readonly replica: string,
    readonly route: string,
    readonly detail: string,
  ) {
    super(`replica ${replica}: ${route} failed on every try: ${detail}`);
  }
}

/**
 * Thrown when a replica refuses an admin call with a 4xx: the route is not enabled (vLLM without
 * VLLM_SERVER_DEV_MODE / runtime LoRA updating), the adapter or weights path is not readable by
 * the engine, or the request is malformed. Not retryable: the deployment or the spec must change.
 */
export class WeightSyncRejectedError extends Error {
  static readonly type = 'WeightSyncRejectedError';
  static readonly retryable = false;
  override readonly name = WeightSyncRejectedError.type;
  constructor(
    readonly replica: string,
    readonly route: string,
    readonly status: number,
    readonly detail: string,
  ) {
    super(`replica ${replica} refused ${route} (HTTP ${status}): ${detail}`);
  }
}

/**
 * Thrown when a step cannot be pushed because its input lacks what the sync mode needs: a full
 * sync of step > 0 without `modelPath` (no weights directory to reload), a LoRA sync of step > 0
 * without `adapterPath`. The trainer always returns both, so this is a caller bug. Not retryable:
 * every attempt gets the same input.
 */
export class WeightSyncInputError extends Error {
  static readonly type = 'WeightSyncInputError';
  static readonly retryable = false;
  override readonly name = WeightSyncInputError.type;
  constructor(
    readonly step: number,
    /** What the step lacks. */
    readonly detail: string,
  ) {
    super(`step ${step} ${detail}`);
  }
}

/** Every error of the weight-sync activity. */
export const WEIGHT_SYNC_ERRORS = [
  StalePolicyError,
  ReplicaUnavailableError,
  WeightSyncRejectedError,
  WeightSyncInputError,
] as const satisfies readonly ErrorClass[];
