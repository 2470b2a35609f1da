/**
 * Errors of the mock world. Each has a fixed `name`, so a Temporal retry policy can list the
 * non-retryable ones by type, and keeps its context (ids) in readonly fields.
 */

/** Thrown when an episode names a task that has no row in `tasks`. Not retryable. */
export class TaskNotFoundError extends Error {
  override readonly name = 'TaskNotFoundError';
  constructor(readonly taskId: string) {
    super(`Task ${taskId} does not exist`);
  }
}

/**
 * Thrown when a task cannot be run yet or at all: tools, instruction I or hidden context C are
 * missing or malformed. Not retryable: the task's data must change first.
 */
export class TaskNotReadyError extends Error {
  override readonly name = 'TaskNotReadyError';
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
  override readonly name = 'EpisodeMismatchError';
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
  override readonly name = 'EpisodeCheckpointConflictError';
  constructor(
    readonly episodeId: string,
    /** Turn count this attempt expected to find in the row. */
    readonly expectedTurns: number,
  ) {
    super(`Episode ${episodeId} was advanced past turn ${expectedTurns} by another attempt`);
  }
}
