import type { FunctionTool } from '../../schemas/function-tool.js';
import {
  MAX_CODE_BYTES,
  PythonToolArgsSchema,
  type PythonRunResult,
  type SandboxCaps,
} from '../../schemas/reasoning-sandbox.js';
import { runPython, type RunDependencies } from './run-python.js';

/** The `python` tool as the policy is offered it (OpenAI function calling). */
export const PYTHON_TOOL: FunctionTool = {
  type: 'function',
  function: {
    name: 'python',
    description:
      'Runs a Python 3.11 program (numpy and sympy installed) in a sandbox and returns what it printed. ' +
      'Print the values you need. No network and no files beyond the working directory; each call ' +
      'starts fresh, with caps on CPU time, wall time, memory, processes and output.',
    parameters: {
      type: 'object',
      properties: { code: { type: 'string', description: 'The complete Python program to run.' } },
      required: ['code'],
    },
  },
};

/** What one call of the `python` tool gives back. */
export interface PythonToolOutcome {
  /** The tool message the policy reads next. */
  readonly content: string;
  /** The run, when the arguments were usable and the program ran. */
  readonly run: PythonRunResult | null;
}

/**
 * One call of the `python` tool with the policy's raw arguments (the JSON string of a tool call).
 * Unusable arguments, a program over its size, and anything the program does come back as the
 * tool's answer, never as a thrown error; only a broken sandbox throws.
 */
export async function callPythonTool(
  deps: RunDependencies,
  rawArguments: string,
  caps: Partial<SandboxCaps> = {},
): Promise<PythonToolOutcome> {
  let args: unknown;
  try {
    args = JSON.parse(rawArguments);
  } catch {
    return refusal('its arguments are not JSON; send {"code": "<program>"}');
  }
  const parsed = PythonToolArgsSchema.safeParse(args);
  if (!parsed.success) return refusal('it takes exactly {"code": "<program>"} with a non-empty program');
  if (new TextEncoder().encode(parsed.data.code).length > MAX_CODE_BYTES) {
    return refusal(`the program is longer than ${MAX_CODE_BYTES} bytes`);
  }
  const run = await runPython(deps, { code: parsed.data.code, caps });
  return { content: toolContent(run), run };
}

function refusal(why: string): PythonToolOutcome {
  return { content: `Error: the python tool was not run: ${why}.`, run: null };
}

/** The tool message of a run: its output, and on failure first what went wrong. */
export function toolContent(run: PythonRunResult): string {
  const parts: string[] = [];
  if (run.outcome !== 'ok') parts.push(`Error: ${run.message}.`);
  if (run.stdout) parts.push(run.stdout);
  if (run.stderr) parts.push(`[stderr]\n${run.stderr}`);
  if (run.truncated) parts.push('[output cut at the cap]');
  if (parts.length === 0) parts.push('(the program printed nothing; print the values you need)');
  return parts.join('\n').trimEnd();
}
