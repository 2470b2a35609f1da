/**
 * Errors of the reward. Each declares its Temporal failure `type` (its `name`) and whether a retry
 * can help (activities/error-class.ts), so the retry policies list the non-retryable ones from
 * {@link REWARD_ERRORS}; each keeps its context (ids) in readonly fields. A judge that fails
 * (rejected structured output, endpoint retries exhausted) throws the model layer's errors
 * unchanged: a rollout is never given a default score. Pure: workflow code imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Thrown when a task cannot be graded: it does not exist, has no rubric yet, its rubric is
 * malformed, or the rubric has neither sub-goals nor required interactions (seed eq. 5 would have
 * no term to average). Not retryable: the task's data must change first.
 */
export class UngradableRubricError extends Error {
  static readonly type = 'UngradableRubricError';
  static readonly retryable = false;
  override readonly name = UngradableRubricError.type;
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
  static readonly type = 'EpisodeNotGradableError';
  static readonly retryable = false;
  override readonly name = EpisodeNotGradableError.type;
  constructor(
    readonly episodeId: string,
    /** What is wrong, e.g. `it has not ended`. */
    readonly detail: string,
  ) {
    super(`Episode ${episodeId} cannot be judged: ${detail}`);
  }
}

/**
 * Thrown when a judge stability audit cannot be planned: the training run does not exist or is
 * not a GrpoTraining run, or it has no held-out evaluation episodes at a checkpoint the spec asks
 * for. Names the spec field to change. Not retryable: the spec (or the training run) must change.
 */
export class JudgeAuditPlanError extends Error {
  static readonly type = 'JudgeAuditPlanError';
  static readonly retryable = false;
  override readonly name = JudgeAuditPlanError.type;
  constructor(
    readonly trainingRunId: string,
    /** The spec field at fault (`trainingRunId`, `checkpoints`). */
    readonly field: string,
    /** What is wrong and what to change. */
    readonly detail: string,
  ) {
    super(`Cannot audit the judge of run ${trainingRunId}: ${field}: ${detail}`);
  }
}

/** Every error of the reward, for the retry policies and the retry-table test. */
export const REWARD_ERRORS = [
  UngradableRubricError,
  EpisodeNotGradableError,
  JudgeAuditPlanError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link REWARD_ERRORS} a retry cannot fix. */
export const REWARD_NON_RETRYABLE_ERRORS = nonRetryableTypes(REWARD_ERRORS);
