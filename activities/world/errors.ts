/**
 * Errors of the mock world. Each declares its Temporal failure `type` (its `name`) and whether a
 * retry can help (activities/error-class.ts), so the retry policies list the non-retryable ones
 * from {@link WORLD_ERRORS}; each keeps its context (ids) in readonly fields. Pure: workflow code
 * imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/** Thrown when an episode names a task that has no row in `tasks`. Not retryable. */
export class TaskNotFoundError extends Error {
  static readonly type = 'TaskNotFoundError';
  static readonly retryable = false;
  override readonly name = TaskNotFoundError.type;
  constructor(readonly taskId: string) {
    super(`Task ${taskId} does not exist`);
  }
}

/**
 * Thrown when a task cannot be run yet or at all: tools, instruction I or hidden context C are
 * missing or malformed. Not retryable: the task's data must change first.
 */
export class TaskNotReadyError extends Error {
  static readonly type = 'TaskNotReadyError';
  static readonly retryable = false;
  override readonly name = TaskNotReadyError.type;
  constructor(
    readonly taskId: string,
    /** What is missing or wrong. */
    readonly detail: string,
  ) {
    super(`Task ${taskId} cannot be run in the mock world: ${detail}`);
  }
}

/**
 * Thrown when an episode id already belongs to an episode of another task, purpose, sample or
 * policy version: episode ids are deterministic, so this is a caller bug. Not retryable.
 */
export class EpisodeMismatchError extends Error {
  static readonly type = 'EpisodeMismatchError';
  static readonly retryable = false;
  override readonly name = EpisodeMismatchError.type;
  constructor(
    readonly episodeId: string,
    /** Which stored field differs from the input, e.g. `sample_index: stored 1, given 2`. */
    readonly detail: string,
  ) {
    super(`Episode ${episodeId} exists with different parameters (${detail})`);
  }
}

/**
 * Thrown when a checkpoint finds that another attempt of the same episode advanced it first (an
 * activity retried while the old attempt still ran). Retryable: the next attempt resumes from the
 * newer checkpoint.
 */
export class EpisodeCheckpointConflictError extends Error {
  static readonly type = 'EpisodeCheckpointConflictError';
  static readonly retryable = true;
  override readonly name = EpisodeCheckpointConflictError.type;
  constructor(
    readonly episodeId: string,
    /** Turn count this attempt expected to find in the row. */
    readonly expectedTurns: number,
  ) {
    super(`Episode ${episodeId} was advanced past turn ${expectedTurns} by another attempt`);
  }
}

/** Every error of the mock world, for the retry policies and the retry-table test. */
export const WORLD_ERRORS = [
  TaskNotFoundError,
  TaskNotReadyError,
  EpisodeMismatchError,
  EpisodeCheckpointConflictError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link WORLD_ERRORS} a retry cannot fix. */
export const WORLD_NON_RETRYABLE_ERRORS = nonRetryableTypes(WORLD_ERRORS);
