/**
 * Errors of the Evaluation run's CPU activities (the math, search and synthetic benchmarks). Each
 * declares its Temporal failure `type` (its `name`) and whether a retry can help
 * (activities/error-class.ts), so the retry policies list the non-retryable ones from
 * {@link EVALUATION_ERRORS}; each keeps its context in readonly fields. Pure: workflow code
 * imports this module. The types are the ones recorded histories carry; `EvalTrialConflict` is also
 * the Python evaluation worker's type for the same case (schemas/evaluation-contract.ts).
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Thrown when a math or search benchmark file cannot be used (unreadable, too large, a bad line,
 * no problem), or a spec names a problem or task id the benchmark does not have. Not retryable:
 * the file or the spec must change.
 */
export class BenchmarkFileError extends Error {
  static readonly type = 'BenchmarkFileError';
  static readonly retryable = false;
  override readonly name = BenchmarkFileError.type;
  constructor(
    /** What is refused: `benchmark file <path>`, a group (`math <group>`) or a spec field. */
    readonly source: string,
    /** What is wrong with it. */
    readonly detail: string,
  ) {
    super(`${source}: ${detail}`);
  }
}

/**
 * Thrown when a trial is already stored under another config hash (other settings or package and
 * data versions) for the same evaluation id. Not retryable: start a new evaluation id.
 */
export class EvalTrialConflict extends Error {
  static readonly type = 'EvalTrialConflict';
  static readonly retryable = false;
  override readonly name = EvalTrialConflict.type;
  constructor(
    /** The trial's key, `evaluation/benchmark/group/task/trial`. */
    readonly trial: string,
    /** The stored config hash. */
    readonly storedHash: string,
    /** This attempt's config hash. */
    readonly hash: string,
  ) {
    super(
      `trial ${trial} is already stored with other settings or versions ` +
        `(config hash ${storedHash.slice(0, 12)}, now ${hash.slice(0, 12)}): start a new evaluation id`,
    );
  }
}

/**
 * Thrown when the judge of a synthetic benchmark trial gave no usable verdict (malformed answers
 * after repair and redraw, recorded in unjudged_rollouts): a judge failure is never a score. Not
 * retryable: the judge's model or template must change.
 */
export class EvalJudgeFailed extends Error {
  static readonly type = 'EvalJudgeFailed';
  static readonly retryable = false;
  override readonly name = EvalJudgeFailed.type;
  constructor(
    readonly episodeId: string,
    /** Why the judge's answers were unusable. */
    readonly reason: string,
  ) {
    super(
      `the judge gave no usable verdict on ${episodeId} (${reason}); a judge failure is never a score: ` +
        'check benchmarks.synthetic.judge',
    );
  }
}

/** Every error of the evaluation activities, for the retry policies and the retry-table test. */
export const EVALUATION_ERRORS = [
  BenchmarkFileError,
  EvalTrialConflict,
  EvalJudgeFailed,
] as const satisfies readonly ErrorClass[];

/** Types of {@link EVALUATION_ERRORS} a retry cannot fix. */
export const EVALUATION_NON_RETRYABLE_ERRORS = nonRetryableTypes(EVALUATION_ERRORS);
