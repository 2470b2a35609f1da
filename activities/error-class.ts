/**
 * What every mockworld error class declares, so that retry policies are derived from the classes
 * and never from retyped strings. Pure (no imports): workflow code runs it (test/unit/layout.test.ts
 * PURE_FOR_WORKFLOWS).
 *
 * - `type`: the Temporal failure type. The SDK reports a thrown Error as an ApplicationFailure whose
 *   type is the error's `name`, and each class sets `name` to its `type`; a retry policy's
 *   `nonRetryableErrorTypes` matches it. A string, not the class's function name, which a bundler
 *   may rename.
 * - `retryable`: whether another attempt of the same activity can succeed (a database back up, a
 *   row written by a concurrent attempt), as opposed to input that must change first.
 */
export interface ErrorClass {
  readonly type: string;
  readonly retryable: boolean;
  readonly prototype: Error;
}

/** The failure types among `classes` that a retry policy must not retry. */
export function nonRetryableTypes(classes: readonly ErrorClass[]): string[] {
  return classes.filter((c) => !c.retryable).map((c) => c.type);
}
