/**
 * Every error an activity throws on purpose, by area, and the failure types the retry policies
 * must not retry (workflows/activity-options.ts takes them from here). Each area's errors live in
 * its own errors.ts; the runs table's error is here, as runs.ts is an area of one file. Pure:
 * workflow code imports this module (test/unit/layout.test.ts PURE_FOR_WORKFLOWS).
 *
 * Not listed: `DataFileNotFoundError` (activities/data-files.ts), an ApplicationFailure marked
 * non-retryable where it is thrown, so no policy needs to name it.
 */
import { nonRetryableTypes, type ErrorClass } from './error-class.js';
import { CORRECTNESS_ERRORS } from './correctness/errors.js';
import { EVALUATION_ERRORS } from './evaluation/errors.js';
import { EXPORT_ERRORS } from './export/errors.js';
import { LLM_ERRORS } from './llm/errors.js';
import { REWARD_ERRORS } from './reward/errors.js';
import { SANDBOX_ERRORS } from './sandbox/errors.js';
import { SEARCH_ERRORS } from './search/errors.js';
import { STORE_ERRORS } from './store/errors.js';
import { STUDY_ERRORS } from './study/errors.js';
import { SYNTHESIS_ERRORS } from './synthesis/errors.js';
import { TEMPLATE_ERRORS } from './templates/errors.js';
import { TRAINING_ERRORS } from './training/errors.js';
import { WORLD_ERRORS } from './world/errors.js';

/**
 * Thrown when a run is started under a workflow id that already holds a run of another kind: the
 * two would share tasks and ledgers. Not retryable: start it under another id.
 */
export class RunIdTakenError extends Error {
  static readonly type = 'RunIdTakenError';
  static readonly retryable = false;
  override readonly name = RunIdTakenError.type;
  constructor(
    readonly runId: string,
    /** The kind of run the id holds (`different` when it could not be read). */
    readonly heldKind: string,
    /** The kind of run being started. */
    readonly kind: string,
  ) {
    super(`workflow id ${runId} already holds a ${heldKind} run; start this ${kind} run under another id`);
  }
}

/** Every error class an activity throws on purpose, area by area. */
export const ACTIVITY_ERRORS = [
  RunIdTakenError,
  ...LLM_ERRORS,
  ...WORLD_ERRORS,
  ...REWARD_ERRORS,
  ...SYNTHESIS_ERRORS,
  ...TRAINING_ERRORS,
  ...STUDY_ERRORS,
  ...TEMPLATE_ERRORS,
  ...STORE_ERRORS,
  ...SANDBOX_ERRORS,
  ...SEARCH_ERRORS,
  ...CORRECTNESS_ERRORS,
  ...EXPORT_ERRORS,
  // Last, so the CPU benchmark activities' policies (workflows/evaluation-activities.ts) list the
  // types in the order recorded histories carry.
  ...EVALUATION_ERRORS,
] as const satisfies readonly ErrorClass[];

/**
 * The failure types of {@link ACTIVITY_ERRORS} a retry cannot fix: every CPU activity's retry
 * policy lists them all (a type is non-retryable wherever it is thrown).
 */
export const NON_RETRYABLE_ACTIVITY_ERRORS: readonly string[] = nonRetryableTypes(ACTIVITY_ERRORS);
