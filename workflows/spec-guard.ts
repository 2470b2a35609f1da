import { ActivityFailure, ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.js';
import { SpecValidationError } from '../schemas/spec-error.js';
import { specFiles } from '../schemas/spec-files.js';
import type { SpecKind, SpecOfKind } from '../schemas/specs.js';
import { SHORT_ACTIVITY } from './activity-options.js';

const { checkSpecFiles } = proxyActivities<RunActivities>(SHORT_ACTIVITY);

/**
 * Validates the workflow's only argument. An invalid spec fails the run at once with a
 * non-retryable failure that names every bad field (visible in the UI), so nothing keeps running.
 * A spec that names data files then has them checked by an activity (found, a regular file,
 * readable by the worker): one that is not fails the run the same way, before anything is recorded.
 *
 * The spec schemas are loaded on first use, not when the workflow bundle is imported: every
 * workflow execution imports the bundle afresh, and building every zod schema cost each child
 * workflow (a GRPO group, a synthesis task) ~50 ms of workflow-thread CPU although children never
 * validate a spec. `webpackMode: "eager"` keeps the schemas in the one bundle (no chunk to fetch).
 */
export async function validateSpec<K extends SpecKind>(kind: K, input: unknown): Promise<SpecOfKind<K>> {
  const spec = await parseSpec(kind, input);
  const files = specFiles(spec);
  // Histories from before the check replay without it.
  if (files.length > 0 && patched('spec-files-checked')) {
    try {
      await checkSpecFiles({ files });
    } catch (error) {
      // The run fails as an invalid spec does, with the activity's message naming every field.
      const cause = error instanceof ActivityFailure ? error.cause : error;
      throw ApplicationFailure.create({
        type: 'SpecFileError',
        message: `Invalid ${kind} spec: ${cause instanceof Error ? cause.message : String(cause)}`,
        nonRetryable: true,
        cause: error instanceof Error ? error : undefined,
      });
    }
  }
  return spec;
}

async function parseSpec<K extends SpecKind>(kind: K, input: unknown): Promise<SpecOfKind<K>> {
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
