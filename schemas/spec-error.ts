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

/** Issues listed at most, and characters of a path or message kept: a hostile document stays a short error. */
const MAX_ISSUES = 50;
const MAX_ISSUE_CHARS = 300;

/** A path or message cut to a bounded length (a 10 MB key must not become a 10 MB failure). */
export function boundedText(text: string, max = MAX_ISSUE_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** Flattens zod issues (including nested union branches) into path/message pairs, bounded. */
export function specIssues(error: z.ZodError): SpecIssue[] {
  return boundIssues(
    error.issues.map((issue) => ({
      path: issue.path.map(String).join('.'),
      message: issue.message,
    })),
  );
}

/** At most {@link MAX_ISSUES} issues, each path and message bounded; the rest are counted. */
export function boundIssues(issues: readonly SpecIssue[]): SpecIssue[] {
  const shown = issues
    .slice(0, MAX_ISSUES)
    .map((i) => ({ path: boundedText(i.path), message: boundedText(i.message) }));
  if (issues.length > MAX_ISSUES) {
    shown.push({ path: '', message: `… and ${issues.length - MAX_ISSUES} more problems` });
  }
  return shown;
}
