/**
 * Errors of the GRPO training activities. Each has a fixed `name`, so a Temporal retry policy can
 * list the non-retryable ones by type, and keeps its context in readonly fields.
 */

/**
 * Thrown when the tasks of an iteration cannot be planned: the synthesis run has too few kept
 * tasks for the held-out set and the global batch. Not retryable: the spec must change.
 */
export class TrainingPlanError extends Error {
  override readonly name = 'TrainingPlanError';
  constructor(
    readonly synthesisRunId: string,
    /** What does not fit, and what to change. */
    readonly detail: string,
  ) {
    super(`Cannot plan GRPO iterations on synthesis run ${synthesisRunId}: ${detail}`);
  }
}

/**
 * Thrown when a trainer batch cannot be built: an episode is missing, unfinished, of another
 * task, has no assistant turn, or a reward is not finite. Not retryable: the caller's items are wrong.
 */
export class TrainerBatchError extends Error {
  override readonly name = 'TrainerBatchError';
  constructor(
    readonly runId: string,
    readonly step: number,
    /** Every problem found (at most 20 named). */
    readonly problems: readonly string[],
  ) {
    const shown =
      problems.slice(0, 20).join('; ') +
      (problems.length > 20 ? `; ... and ${problems.length - 20} more` : '');
    super(`Cannot build trainer batch ${runId} step ${step}: ${shown}`);
  }
}
