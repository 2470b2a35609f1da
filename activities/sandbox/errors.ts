/**
 * Errors of the sandbox. Each declares its Temporal failure `type` (its `name`) and whether a retry
 * can help, like every area's errors (activities/error-class.ts). Hostile or broken code is never
 * one of these: it is a tool result (`PythonRunResult`), which the policy sees. These say that the
 * sandbox itself could not run, or that the caller asked for something it refuses. Pure: workflow
 * code may import this module.
 */

/**
 * Thrown when the sandbox cannot run at all: its venv or bubblewrap is missing, or bubblewrap
 * cannot create its namespaces on this machine, or the interpreter did not start inside it. Not
 * retryable: the machine must change first (deploy/sandbox-venv.sh says what is wrong).
 */
export class SandboxUnavailableError extends Error {
  static readonly type = 'SandboxUnavailableError';
  static readonly retryable = false;
  override readonly name = SandboxUnavailableError.type;
  constructor(
    /** What is missing or what failed, with bubblewrap's own words when it printed any. */
    readonly detail: string,
  ) {
    super(`The Python sandbox cannot run on this worker: ${detail}`);
  }
}

/**
 * Thrown when a sandbox request is invalid (code or stdin over their size, caps out of range).
 * Not retryable: the caller must change the request.
 */
export class SandboxRequestError extends Error {
  static readonly type = 'SandboxRequestError';
  static readonly retryable = false;
  override readonly name = SandboxRequestError.type;
  constructor(readonly detail: string) {
    super(`Invalid sandbox request: ${detail}`);
  }
}

/** Every error of the sandbox, for the retry policies and the retry-table test. */
export const SANDBOX_ERRORS = [SandboxUnavailableError, SandboxRequestError] as const;
