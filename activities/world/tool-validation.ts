import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { BOUNDS } from '../../schemas/bounds.js';
import type { FunctionTool } from '../../schemas/function-tool.js';
import { outOfBounds } from '../llm/answer-bounds.js';
import { canonicalJson, sha256 } from '../llm/cache-key.js';
import { storableJson } from '../store/storable.js';
import {
  invalidJsonObservation,
  schemaViolationObservation,
  unknownToolObservation,
} from './observations.js';

/** A tool call as the agent wrote it: a name and the arguments text. */
export interface RawToolCall {
  readonly name: string;
  readonly arguments: string;
}

/** Why a call cannot be run. */
export type ToolCallProblem = 'unknown_tool' | 'invalid_json' | 'invalid_arguments';

/** The outcome of {@link validateToolCall}. */
export type ToolCallCheck =
  | {
      readonly ok: true;
      readonly tool: FunctionTool;
      /** The parsed arguments, a JSON object. */
      readonly args: Record<string, unknown>;
    }
  | {
      readonly ok: false;
      readonly problem: ToolCallProblem;
      /** The tool message to give the agent instead of a response. */
      readonly observation: string;
    };

// strict: false because generated tool schemas carry keywords Ajv does not know (examples,
// x-extensions); formats are not checked since no format package is a dependency, and a mock
// tool gains nothing from rejecting a date the simulator can read anyway.
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, logger: false });

/** Bound on compiled validators kept per process; a training run sees a bounded set of tasks at once. */
const MAX_VALIDATORS = 4096;

/** Compiled validators by sha256 of the canonical parameters schema (tool names repeat across tasks). */
const validators = new Map<string, ValidateFunction>();

/**
 * The validator of a parameters schema, compiled once per process. A schema Ajv cannot compile
 * (a broken `$ref`, an unknown draft) gets a validator that only asks for an object: the task's
 * tools were checked when they were synthesized, and a rollout must not crash on one odd schema.
 */
function validatorFor(parameters: unknown): ValidateFunction {
  const key = sha256(canonicalJson(parameters));
  let validate = validators.get(key);
  if (!validate) {
    // `$schema` naming another draft makes Ajv refuse the whole schema; the keywords still apply.
    const { $schema: _ignored, ...schema } = parameters as Record<string, unknown>;
    try {
      validate = ajv.compile(schema);
    } catch {
      validate = ajv.compile({ type: 'object' });
    }
    if (validators.size >= MAX_VALIDATORS) validators.delete(validators.keys().next().value!);
    validators.set(key, validate);
  }
  return validate;
}

/** One line per violation: where, and what is wrong. */
function describe(errors: readonly ErrorObject[]): string[] {
  return errors.map((e) => {
    const at = e.instancePath || '(root)';
    const extra =
      e.keyword === 'additionalProperties'
        ? ` ("${String(e.params['additionalProperty'])}")`
        : e.keyword === 'enum'
          ? ` (${JSON.stringify(e.params['allowedValues'])})`
          : '';
    return `${at}: ${e.message ?? e.keyword}${extra}`;
  });
}

/**
 * Checks a call against the tools offered to the agent: the name must be one of them, the
 * arguments a JSON object valid against its `parameters`. Never throws: a bad call yields an
 * error observation for the agent. Empty arguments text counts as `{}`, as several servers send
 * it for calls without arguments.
 */
export function validateToolCall(tools: readonly FunctionTool[], call: RawToolCall): ToolCallCheck {
  const tool = tools.find((t) => t.function.name === call.name);
  if (!tool) {
    return {
      ok: false,
      problem: 'unknown_tool',
      observation: unknownToolObservation(
        call.name,
        tools.map((t) => t.function.name),
      ),
    };
  }
  // Bounded before parsing: the arguments are stored in the mapping and hashed recursively.
  const out = outOfBounds(call.arguments, {
    maxBytes: BOUNDS.toolArgumentsBytes,
    json: true,
    what: 'the arguments text',
  });
  if (out)
    return { ok: false, problem: 'invalid_json', observation: invalidJsonObservation(call.name, out.detail) };
  let args: unknown;
  try {
    // Storable: the arguments are kept in the task's mapping (jsonb), escapes and all.
    args = call.arguments.trim() === '' ? {} : storableJson(JSON.parse(call.arguments));
  } catch (error) {
    return {
      ok: false,
      problem: 'invalid_json',
      observation: invalidJsonObservation(call.name, `not valid JSON (${(error as Error).message})`),
    };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    const kind = args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args;
    return {
      ok: false,
      problem: 'invalid_json',
      observation: invalidJsonObservation(call.name, `got ${kind}`),
    };
  }
  const validate = validatorFor(tool.function.parameters);
  if (!validate(args)) {
    return {
      ok: false,
      problem: 'invalid_arguments',
      observation: schemaViolationObservation(call.name, describe(validate.errors ?? [])),
    };
  }
  return { ok: true, tool, args: args as Record<string, unknown> };
}
