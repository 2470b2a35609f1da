import { ApplicationFailure } from '@temporalio/workflow';
import { SpecValidationError } from '../schemas/spec-error.js';
import type { SpecKind, SpecOfKind } from '../schemas/specs.js';

/**
 * Validates the workflow's only argument. An invalid spec fails the run at once with a
 * non-retryable failure that names every bad field (visible in the UI), so nothing keeps running.
 *
 * The spec schemas are loaded on first use, not when the workflow bundle is imported: every
 * workflow execution imports the bundle afresh, and building every zod schema cost each child
 * workflow (a GRPO group, a synthesis task) ~50 ms of workflow-thread CPU although children never
 * validate a spec. `webpackMode: "eager"` keeps the schemas in the one bundle (no chunk to fetch).
 */
export async function validateSpec<K extends SpecKind>(kind: K, input: unknown): Promise<SpecOfKind<K>> {
  const { parseSpecOfKind } = await import(/* webpackMode: "eager" */ '../schemas/specs.js');
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
