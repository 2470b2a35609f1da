/**
 * Errors of the synthesis pipeline. Each declares its Temporal failure `type` (its `name`) and
 * whether a retry can help (activities/error-class.ts), so the retry policies list the
 * non-retryable ones from {@link SYNTHESIS_ERRORS}. Model answers that fail a stage's checks are
 * not errors: they are recorded on the task's row as its reject reason. Pure: workflow code
 * imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Raised when a stage finds the task's row missing (the toolset stage creates it) or is asked to
 * write a column that is not one: the workflow ran stages out of order, or a bug. Not retryable.
 */
export class SynthesisStageError extends Error {
  static readonly type = 'SynthesisStageError';
  static readonly retryable = false;
  override readonly name = SynthesisStageError.type;
  constructor(
    readonly taskId: string,
    /** What is wrong. */
    readonly detail: string,
  ) {
    super(`Task ${taskId}: ${detail}`);
  }
}

/**
 * Raised when a personas (or reasoning seed) file cannot be read (missing, unreadable, not text). Not retryable: every
 * attempt reads the same file; the spec's path or the file must change.
 */
export class PersonaFileError extends Error {
  static readonly type = 'PersonaFileError';
  static readonly retryable = false;
  override readonly name = PersonaFileError.type;
  constructor(
    readonly file: string,
    /** Why it could not be read (the file system's message). */
    readonly reason: string,
    /** What the file holds (the reasoning seed problems are read the same way). */
    what = 'personas',
  ) {
    super(`Cannot read ${what} from ${file}: ${reason}`);
  }
}

/**
 * Raised when a run's dataset cannot be exported: no run of that id, or a run of another kind.
 * Not retryable: the id names the wrong run.
 */
export class DatasetExportError extends Error {
  static readonly type = 'DatasetExportError';
  static readonly retryable = false;
  override readonly name = DatasetExportError.type;
  constructor(
    readonly runId: string,
    /** What is wrong. */
    readonly detail: string,
  ) {
    super(`Cannot export run ${runId}: ${detail}`);
  }
}

/** Thrown when the file has bad lines (each named) or the dataset id is taken; nothing is written. */
export class DatasetImportError extends Error {
  static readonly type = 'DatasetImportError';
  static readonly retryable = false;
  override readonly name = DatasetImportError.type;
}

/** Every error of the synthesis pipeline, for the retry policies and the retry-table test. */
export const SYNTHESIS_ERRORS = [
  SynthesisStageError,
  PersonaFileError,
  DatasetExportError,
  DatasetImportError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link SYNTHESIS_ERRORS} a retry cannot fix. */
export const SYNTHESIS_NON_RETRYABLE_ERRORS = nonRetryableTypes(SYNTHESIS_ERRORS);
