import type { FunctionTool } from '../../schemas/function-tool.js';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { TOOL_SIMULATION_SCHEMA_NAME, toolSimulationSchema } from '../../schemas/tool-simulation.js';
import { StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import { storableJson } from '../store/storable.js';
import { loadTemplate, renderTemplate, type TemplateChoice } from '../templates/templates.js';
import { canonicalArgs } from './canonical-args.js';
import type { MappingEntry } from './mapping-store.js';
import { callSettings, TOOL_SIMULATOR_ROLE, type CallContext } from './model-roles.js';

/** Characters of an existing response shown to the simulator; it judges equivalence by arguments. */
const SHOWN_RESPONSE_CHARS = 1_000;

/**
 * Sample indices tried before a rejected simulation fails the call. A rejected structured output
 * is cached, so asking again with the same index gets the same rejection; another index is a new
 * draw.
 */
const SIMULATION_DRAWS = 3;

/** What the tool simulator is given. */
export interface SimulationRequest {
  /** The agent-visible instruction I: context for plausible outputs, and never the hidden C. */
  readonly instruction: string;
  readonly tool: FunctionTool;
  /** The validated arguments of the call. */
  readonly args: Record<string, unknown>;
  /** Existing entries of this tool in the task's mapping, oldest first (bounded by the caller). */
  readonly entries: readonly MappingEntry[];
}

/** The simulator's decision: reuse an equivalent entry, or a new response. */
export type Simulation =
  | { readonly kind: 'equivalent'; readonly entry: MappingEntry }
  | { readonly kind: 'simulated'; readonly response: unknown };

/** Settings of the tool simulator. */
export interface ToolSimulatorOptions extends CallContext {
  readonly models: ModelClient;
  readonly role: ModelRole;
  readonly templates: TemplateChoice;
}

/** The numbered list of existing entries, responses cut to a bounded length. */
function renderEntries(entries: readonly MappingEntry[]): string {
  if (entries.length === 0) return '(no earlier calls of this tool)';
  return entries
    .map((entry, i) => {
      const response = JSON.stringify(entry.response);
      const shown =
        response.length <= SHOWN_RESPONSE_CHARS ? response : `${response.slice(0, SHOWN_RESPONSE_CHARS)}…`;
      return `[${i}] arguments: ${canonicalArgs(entry.args)}\n    response: ${shown}`;
    })
    .join('\n');
}

/** The response as JSON when the text is JSON, else the text itself (a tool may answer in prose). */
export function parseResponse(text: string): unknown {
  try {
    return storableJson(JSON.parse(text.trim()));
  } catch {
    return text;
  }
}

/**
 * Asks the tool simulator for one call's response (seed §3.2): in one forward pass it either
 * names an equivalent entry of the mapping or generates a new response. Throws
 * {@link StructuredOutputRejectedError} when every draw was rejected.
 */
export async function simulateToolCall(
  options: ToolSimulatorOptions,
  request: SimulationRequest,
): Promise<Simulation> {
  const template = await loadTemplate('toolSimulator', options.templates);
  const prompt = renderTemplate(template, {
    instruction: request.instruction,
    toolName: request.tool.function.name,
    toolSpec: JSON.stringify(request.tool.function, null, 2),
    entries: renderEntries(request.entries),
    arguments: canonicalArgs(request.args),
  });
  const schema = toolSimulationSchema(request.entries.length);
  for (let draw = 0; ; draw++) {
    try {
      const { value } = await options.models.structured(
        {
          ...callSettings(options.role, TOOL_SIMULATOR_ROLE, options),
          messages: [{ role: 'user', content: prompt }],
          sampleIndex: draw,
        },
        schema,
        TOOL_SIMULATION_SCHEMA_NAME,
      );
      const entry = value.equivalentTo === null ? undefined : request.entries[value.equivalentTo];
      return entry
        ? { kind: 'equivalent', entry }
        : { kind: 'simulated', response: parseResponse(value.response) };
    } catch (error) {
      if (!(error instanceof StructuredOutputRejectedError) || draw + 1 >= SIMULATION_DRAWS) throw error;
    }
  }
}
