import type { PythonRunRequest, PythonRunResult, SandboxCaps } from '../../schemas/reasoning-sandbox.js';
import { activityCancellation } from '../cancellation.js';
import { DEFAULT_SANDBOX_VENV, locateSandbox, type SandboxInstall } from './install.js';
import { runPython } from './run-python.js';
import { callPythonTool, type PythonToolOutcome } from './tool.js';

export { SANDBOX_ERRORS, SandboxRequestError, SandboxUnavailableError } from './errors.js';
export { locateSandbox, type SandboxInstall } from './install.js';
export { MEMORY_EXIT_CODE, runPython, type RunDependencies } from './run-python.js';
export { callPythonTool, PYTHON_TOOL, toolContent, type PythonToolOutcome } from './tool.js';

/** Input of the `pythonTool` activity: one tool call of the policy. */
export interface PythonToolInput {
  /** The tool call's `arguments`, as the policy wrote them (JSON text). */
  readonly arguments: string;
  /** Caps other than the defaults (schemas/reasoning-sandbox.ts). */
  readonly caps?: Partial<SandboxCaps>;
}

/**
 * The sandbox's activities. The venv is looked up at the first call, not at worker start: a
 * worker that never runs reasoning tasks needs no sandbox.
 */
export function createSandboxActivities(venv: string = DEFAULT_SANDBOX_VENV) {
  let install: SandboxInstall | undefined;
  const deps = () => ({ install: (install ??= locateSandbox(venv)), signal: activityCancellation() });
  return {
    /** Runs a Python program in the sandbox (tool code, the math verifier). */
    async runSandboxedPython(request: PythonRunRequest): Promise<PythonRunResult> {
      return runPython(deps(), request);
    },
    /** One call of the policy's `python` tool: its message, and the run behind it. */
    async pythonTool(input: PythonToolInput): Promise<PythonToolOutcome> {
      return callPythonTool(deps(), input.arguments, input.caps);
    },
  };
}

export type SandboxActivities = ReturnType<typeof createSandboxActivities>;
