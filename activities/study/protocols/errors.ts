/**
 * Errors of the study's pure protocol functions. They are programming or configuration errors of
 * the caller (a template of the wrong stage, embeddings of different sizes, an empty persona
 * list), never a verdict about model output: model output that fails a protocol check is returned
 * as a recorded rejection reason instead.
 */

/**
 * Thrown when a protocol function is called with input it cannot work on. Not retryable: the
 * caller's input must change first.
 */
export class ProtocolInputError extends Error {
  override readonly name = 'ProtocolInputError';
  constructor(
    /** The function that refused its input, e.g. `selectDiverseResponses`. */
    readonly operation: string,
    /** What is wrong, e.g. `embedding 3 has 2 dimensions, expected 4`. */
    readonly detail: string,
  ) {
    super(`${operation}: ${detail}`);
  }
}
