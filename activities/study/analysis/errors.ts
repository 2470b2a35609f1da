/**
 * Errors of the scaling-study analysis. The analysis is pure: an error here always means the
 * caller passed data the seed's formulas cannot be applied to (too few budgets, a missing
 * held-out point, an id twice in a pool), never a transient failure, so none is retryable.
 */

/**
 * Thrown when analysis input cannot be used as given. `detail` says what is wrong and what the
 * formula needs instead, e.g. `the fit needs at least 3 distinct r, got 2 (r = 1, 2)`.
 */
export class AnalysisInputError extends Error {
  override readonly name = 'AnalysisInputError';
  constructor(
    /** Which analysis refused the input, e.g. `fitScalingLaw`. */
    readonly analysis: string,
    /** What is wrong with the input. */
    readonly detail: string,
  ) {
    super(`${analysis}: ${detail}`);
  }
}
