/**
 * Errors of the dataset export formats (activities/export). Each declares its Temporal failure
 * `type` (its `name`) and whether a retry can help (activities/error-class.ts), so the retry
 * policies list the non-retryable ones from {@link EXPORT_ERRORS}. A run that cannot be exported
 * at all (no such run, another kind) is the synthesis area's DatasetExportError. Pure: workflow
 * code imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Thrown when a Parquet layout (activities/export/parquet.ts) has a column the dataset card
 * cannot name a Hugging Face `datasets` type for: the layout and the card's type mapping disagree,
 * a bug. Not retryable: every attempt renders the same layout.
 */
export class ParquetLayoutError extends Error {
  static readonly type = 'ParquetLayoutError';
  static readonly retryable = false;
  override readonly name = ParquetLayoutError.type;
  constructor(
    readonly column: string,
    /** The column's Parquet physical type (and converted type, when it has one). */
    readonly parquetType: string,
  ) {
    super(`no datasets dtype for the Parquet column ${column} (${parquetType})`);
  }
}

/** Every error of the export formats, for the retry policies and the retry-table test. */
export const EXPORT_ERRORS = [ParquetLayoutError] as const satisfies readonly ErrorClass[];

/** Types of {@link EXPORT_ERRORS} a retry cannot fix. */
export const EXPORT_NON_RETRYABLE_ERRORS = nonRetryableTypes(EXPORT_ERRORS);
