/**
 * Errors of the scaling study: its activities, its pure protocol functions (protocols/) and its
 * analysis (analysis/). Each declares its Temporal failure `type` (its `name`) and whether a retry
 * can help (activities/error-class.ts), so the retry policies list the non-retryable ones from
 * {@link STUDY_ERRORS}. Model output that fails a protocol check is not an error: it is returned
 * as a recorded rejection reason. Pure: workflow code imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Thrown when a study's input cannot be used: a question file that cannot be read or holds no
 * valid question, a question id the study does not hold, the persona protocol without personas.
 * Not retryable: the spec or its files must change first.
 */
export class StudyInputError extends Error {
  static readonly type = 'StudyInputError';
  static readonly retryable = false;
  override readonly name = StudyInputError.type;
  constructor(
    readonly studyId: string,
    /** What is wrong, and with which file or id. */
    readonly detail: string,
  ) {
    super(`Study ${studyId}: ${detail}`);
  }
}

/**
 * Thrown when the embeddings endpoint answers with another number of vectors than it was sent
 * responses: a selection computed from it would be kept for good. Retryable: the call is not
 * cached, and a server that dropped an item under load answers in full next time.
 */
export class EmbeddingAnswerError extends Error {
  static readonly type = 'EmbeddingAnswerError';
  static readonly retryable = true;
  override readonly name = EmbeddingAnswerError.type;
  constructor(
    readonly endpoint: string,
    /** Responses sent. */
    readonly sent: number,
    /** Vectors received. */
    readonly received: number,
  ) {
    super(`the embeddings endpoint ${endpoint} returned ${received} vectors for ${sent} responses`);
  }
}

/**
 * Thrown when a protocol function is called with input it cannot work on (a template of the
 * wrong stage, embeddings of different sizes, an empty persona list): a programming or
 * configuration error of the caller, never a verdict about model output. Not retryable: the
 * caller's input must change first.
 */
export class ProtocolInputError extends Error {
  static readonly type = 'ProtocolInputError';
  static readonly retryable = false;
  override readonly name = ProtocolInputError.type;
  constructor(
    /** The function that refused its input, e.g. `selectDiverseResponses`. */
    readonly operation: string,
    /** What is wrong, e.g. `embedding 3 has 2 dimensions, expected 4`. */
    readonly detail: string,
  ) {
    super(`${operation}: ${detail}`);
  }
}

/**
 * Thrown when analysis input cannot be used as given. The analysis is pure: an error here always
 * means the caller passed data the seed's formulas cannot be applied to (too few budgets, a
 * missing held-out point, an id twice in a pool), never a transient failure, so it is not
 * retryable. `detail` says what is wrong and what the formula needs instead, e.g. `the fit needs
 * at least 3 distinct r, got 2 (r = 1, 2)`.
 */
export class AnalysisInputError extends Error {
  static readonly type = 'AnalysisInputError';
  static readonly retryable = false;
  override readonly name = AnalysisInputError.type;
  constructor(
    /** Which analysis refused the input, e.g. `fitScalingLaw`. */
    readonly analysis: string,
    /** What is wrong with the input. */
    readonly detail: string,
  ) {
    super(`${analysis}: ${detail}`);
  }
}

/** Every error of the scaling study, for the retry policies and the retry-table test. */
export const STUDY_ERRORS = [
  StudyInputError,
  EmbeddingAnswerError,
  ProtocolInputError,
  AnalysisInputError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link STUDY_ERRORS} a retry cannot fix. */
export const STUDY_NON_RETRYABLE_ERRORS = nonRetryableTypes(STUDY_ERRORS);
