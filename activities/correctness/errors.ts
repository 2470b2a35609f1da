/**
 * Errors of the correctness rewards. Each declares its Temporal failure `type` (its `name`) and
 * whether a retry can help (activities/error-class.ts). A wrong or missing answer is a reward of
 * 0, never one of these; a judge that fails throws the model layer's errors unchanged, so a
 * response is never given a default score. Pure: workflow code may import this module.
 */

/**
 * Thrown when a scoring request cannot be honoured: a search problem without a judge, or a reward
 * id already stored for another response or problem. Not retryable: the caller must change.
 */
export class CorrectnessInputError extends Error {
  static readonly type = 'CorrectnessInputError';
  static readonly retryable = false;
  override readonly name = CorrectnessInputError.type;
  constructor(readonly detail: string) {
    super(`Cannot score these answers: ${detail}`);
  }
}

/**
 * Thrown when the sandboxed math verifier failed in a way no answer explains (it did not start,
 * or printed something that is not its verdicts). Retryable: another attempt runs it afresh.
 */
export class MathVerifierError extends Error {
  static readonly type = 'MathVerifierError';
  static readonly retryable = true;
  override readonly name = MathVerifierError.type;
  constructor(readonly detail: string) {
    super(`The math verifier failed: ${detail}`);
  }
}

/** Every error of the correctness rewards, for the retry policies and the retry-table test. */
export const CORRECTNESS_ERRORS = [CorrectnessInputError, MathVerifierError] as const;
