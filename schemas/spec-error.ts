import type { z } from 'zod';

/** One invalid field of a spec: its dotted path and what is wrong with it. */
export interface SpecIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * Thrown when a spec does not validate. Names every bad field, so a user fixes them all at once.
 * The message is self-contained because it reaches users through the Temporal UI's failure view.
 */
export class SpecValidationError extends Error {
  override readonly name = 'SpecValidationError';
  constructor(
    readonly kind: string,
    readonly issues: readonly SpecIssue[],
  ) {
    super(
      `Invalid ${kind} spec (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n` +
        issues.map((i) => `  - ${i.path || '(root)'}: ${i.message}`).join('\n'),
    );
  }
}

/** Flattens zod issues (including nested union branches) into path/message pairs. */
export function specIssues(error: z.ZodError): SpecIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map(String).join('.'),
    message: issue.message,
  }));
}
