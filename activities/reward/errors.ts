/**
 * Errors of the reward. Each has a fixed `name`, so a Temporal retry policy can list the
 * non-retryable ones by type, and keeps its context (ids) in readonly fields. A judge that fails
 * (rejected structured output, endpoint retries exhausted) throws the model layer's errors
 * unchanged: a rollout is never given a default score.
 */

/**
 * Thrown when a task cannot be graded: it does not exist, has no rubric yet, its rubric is
 * malformed, or the rubric has neither sub-goals nor required interactions (seed eq. 5 would have
 * no term to average). Not retryable: the task's data must change first.
 */
export class UngradableRubricError extends Error {
  override readonly name = 'UngradableRubricError';
  constructor(
    /** What is missing or wrong. */
    readonly detail: string,
    /** The task, when known (the pure reward function does not know it). */
    readonly taskId?: string,
  ) {
    super(taskId ? `Task ${taskId} cannot be graded: ${detail}` : `Cannot grade: ${detail}`);
  }
}

/**
 * Thrown when an episode cannot be judged: it does not exist, belongs to another task, has not
 * ended yet, or its id already carries a judgement of another task. Not retryable: episode ids
 * are deterministic and a workflow judges an episode after its rollout returned, so this is a
 * caller bug.
 */
export class EpisodeNotGradableError extends Error {
  override readonly name = 'EpisodeNotGradableError';
  constructor(
    readonly episodeId: string,
    /** What is wrong, e.g. `it has not ended`. */
    readonly detail: string,
  ) {
    super(`Episode ${episodeId} cannot be judged: ${detail}`);
  }
}
