import { ApplicationFailure } from '@temporalio/workflow';
import { SpecValidationError } from '../schemas/spec-error';
import { parseSpecOfKind, type SpecKind } from '../schemas/specs';

/**
 * Validates the workflow's only argument. An invalid spec fails the run at once with a
 * non-retryable failure that names every bad field (visible in the UI), so nothing keeps running.
 */
export function validateSpec<K extends SpecKind>(
  kind: K,
  input: unknown,
): ReturnType<typeof parseSpecOfKind<K>> {
  try {
    return parseSpecOfKind(kind, input);
  } catch (error) {
    if (error instanceof SpecValidationError) {
      throw ApplicationFailure.create({
        type: 'SpecValidationError',
        message: error.message,
        nonRetryable: true,
        details: [error.issues],
      });
    }
    throw error;
  }
}
