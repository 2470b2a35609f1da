/**
 * Errors of the GRPO training activities. Each declares its Temporal failure `type` (its `name`)
 * and whether a retry can help (activities/error-class.ts), so the retry policies list the
 * non-retryable ones from {@link TRAINING_ERRORS}; each keeps its context in readonly fields.
 * Pure: workflow code imports this module. The Python trainer's own failure types are the
 * contract's (schemas/trainer-contract.ts TRAINER_ERROR_TYPES).
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';
import { WEIGHT_SYNC_ERRORS } from './weight-sync-errors.js';

/**
 * Thrown when a training run's data cannot be planned: the synthesis run has too few kept tasks
 * for the held-out set and GRPO's global batch, or too few kept demonstrations for SFT's
 * `examples`. Not retryable: the spec must change (the detail names the field).
 */
export class TrainingPlanError extends Error {
  static readonly type = 'TrainingPlanError';
  static readonly retryable = false;
  override readonly name = TrainingPlanError.type;
  constructor(
    readonly synthesisRunId: string,
    /** What does not fit, and what to change. */
    readonly detail: string,
  ) {
    super(`Cannot plan training on synthesis run ${synthesisRunId}: ${detail}`);
  }
}

/**
 * Thrown when a trainer batch cannot be built: an episode is missing, unfinished, of another
 * task, has no assistant turn, or a reward is not finite. Not retryable: the caller's items are wrong.
 */
export class TrainerBatchError extends Error {
  static readonly type = 'TrainerBatchError';
  static readonly retryable = false;
  override readonly name = TrainerBatchError.type;
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

/**
 * Thrown when more of an iteration's rollouts could not be judged (malformed judge answers after
 * repair and redraw) than GrpoTraining's maxUnjudgedFraction allows: a judge failing that often is
 * misconfigured (wrong model or template), and training on the rest would favour the transcripts
 * it can read. Not retryable: the judge or the spec must change.
 */
export class UnjudgedRolloutsError extends Error {
  static readonly type = 'UnjudgedRolloutsError';
  static readonly retryable = false;
  override readonly name = UnjudgedRolloutsError.type;
  constructor(
    readonly runId: string,
    readonly iteration: number,
    readonly unjudged: number,
    readonly rollouts: number,
    readonly maxUnjudgedFraction: number,
  ) {
    super(
      `${unjudged} of ${rollouts} rollouts of run ${runId} iteration ${iteration} could not be judged ` +
        `(malformed judge answers after repair and redraw, in unjudged_rollouts and llm_rejections): more ` +
        `than maxUnjudgedFraction ${maxUnjudgedFraction}; check the judge model and its template`,
    );
  }
}

/** Every error of the training activities, for the retry policies and the retry-table test. */
export const TRAINING_ERRORS = [
  TrainingPlanError,
  TrainerBatchError,
  UnjudgedRolloutsError,
  ...WEIGHT_SYNC_ERRORS,
] as const satisfies readonly ErrorClass[];

/** Types of {@link TRAINING_ERRORS} a retry cannot fix. */
export const TRAINING_NON_RETRYABLE_ERRORS = nonRetryableTypes(TRAINING_ERRORS);
