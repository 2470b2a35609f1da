/**
 * Errors of the prompt templates. Each declares its Temporal failure `type` (its `name`) and
 * whether a retry can help (activities/error-class.ts), so the retry policies list the
 * non-retryable ones from {@link TEMPLATE_ERRORS}. Pure: workflow code imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Raised when a template file (shipped, or an override a spec names) cannot be read. Not
 * retryable: every attempt reads the same file system; the path or the file must change.
 */
export class TemplateFileError extends Error {
  static readonly type = 'TemplateFileError';
  static readonly retryable = false;
  override readonly name = TemplateFileError.type;
  constructor(
    /** The stage the template is for, e.g. `toolset` or `agent`. */
    readonly stage: string,
    /** The file tried. */
    readonly file: string,
    /** Why it could not be read (the file system's message). */
    readonly reason: string,
  ) {
    super(`Cannot read the ${stage} template ${file}: ${reason}`);
  }
}

/**
 * Raised when a template has a `{{placeholder}}` its caller gives no value for: a template (an
 * override, say) and its caller disagree. Not retryable: the template or the code must change.
 */
export class TemplateValueError extends Error {
  static readonly type = 'TemplateValueError';
  static readonly retryable = false;
  override readonly name = TemplateValueError.type;
  constructor(
    /** The template's id (`v1/toolset@<sha256 prefix>`, `file@<sha256 prefix>`, or its file). */
    readonly templateId: string,
    /** The placeholder without a value. */
    readonly placeholder: string,
  ) {
    super(`Template ${templateId} needs a value for {{${placeholder}}}`);
  }
}

/** Every error of the templates, for the retry policies and the retry-table test. */
export const TEMPLATE_ERRORS = [
  TemplateFileError,
  TemplateValueError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link TEMPLATE_ERRORS} a retry cannot fix. */
export const TEMPLATE_NON_RETRYABLE_ERRORS = nonRetryableTypes(TEMPLATE_ERRORS);
