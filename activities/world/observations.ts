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

/**
 * A call after the user ended the conversation in the same turn (or after the episode was
 * rejected in it): it is answered, not run.
 */
export function notRunObservation(name: string, why = 'the user ended the conversation'): string {
  return JSON.stringify({
    error: 'not_run',
    message: `"${name}" was not run: ${why}.`,
  });
}

/**
 * A task tool whose simulator gave no usable answer, after its repair and redraws (world setting
 * `toolSimulatorFailure: tool-error`): the agent sees a failing tool, as it might in the real world.
 */
export function toolUnavailableObservation(name: string): string {
  return JSON.stringify({
    error: 'tool_unavailable',
    message: `"${name}" failed and returned no result. Try again later, with other arguments, or go on without it.`,
  });
}

/** An `ask_user` the simulated user could not answer within bounds (`userSimulatorFailure: tool-error`). */
export function userUnavailableObservation(): string {
  return JSON.stringify({
    error: 'user_unavailable',
    message: 'The user did not answer. Ask again, more precisely, or go on with what you know.',
  });
}

/** A call past the per-turn limit: answered, never run. */
export function tooManyCallsObservation(name: string, limit: number): string {
  return JSON.stringify({
    error: 'not_run',
    message: `"${name}" was not run: at most ${limit} tool calls are run per turn. Call it again in the next turn.`,
  });
}
