/**
 * Texts of the tool messages the world writes when it cannot run a call. They are JSON, like the
 * simulated responses, so the agent reads every observation the same way, and they say what to
 * change: a policy in training learns to fix the call instead of seeing the episode crash.
 */

/** Violations listed in one observation, at most; the rest are counted. */
const MAX_VIOLATIONS = 20;

/** The tool named in a call is not part of the task's tool set. */
export function unknownToolObservation(name: string, available: readonly string[]): string {
  return JSON.stringify({
    error: 'unknown_tool',
    message: `The tool "${name}" does not exist. Call one of the available tools.`,
    available_tools: available,
  });
}

/** The arguments text is not JSON, or not a JSON object. */
export function invalidJsonObservation(name: string, detail: string): string {
  return JSON.stringify({
    error: 'invalid_arguments',
    message: `The arguments of "${name}" must be a JSON object: ${detail}`,
  });
}

/** The arguments violate the tool's JSON schema; every violation is listed (bounded). */
export function schemaViolationObservation(name: string, violations: readonly string[]): string {
  const shown = violations.slice(0, MAX_VIOLATIONS);
  const more = violations.length - shown.length;
  return JSON.stringify({
    error: 'invalid_arguments',
    message: `The arguments of "${name}" do not match its parameters schema.`,
    violations: more > 0 ? [...shown, `... and ${more} more`] : shown,
  });
}

/** A call after the user ended the conversation in the same turn: it is answered, not run. */
export function notRunObservation(name: string): string {
  return JSON.stringify({
    error: 'not_run',
    message: `"${name}" was not run: the user ended the conversation.`,
  });
}
