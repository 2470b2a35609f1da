import { Ajv } from 'ajv';
import { BOUNDS, utf8Bytes } from '../../schemas/bounds.js';
import { FunctionToolSchema, type FunctionTool } from '../../schemas/function-tool.js';

/** Tool names the mock world reserves for itself. */
export const RESERVED_TOOL_NAMES = new Set(['ask_user']);

/** Outcome of checking a generated tool set: the tools, or every reason it is unusable. */
export type ToolsetCheck =
  { readonly ok: true; readonly tools: FunctionTool[] } | { readonly ok: false; readonly problems: string[] };

const ajv = new Ajv({ strict: false, allErrors: true });

/**
 * Checks that a model-generated tool set parses as OpenAI function-calling tools (seed App. A:
 * samples that do not parse are filtered out): each spec valid, each `parameters` a compilable
 * JSON schema whose `required` names existing properties, names unique and not reserved, and
 * each spec at most `BOUNDS.toolSchemaBytes` (it is sent to the agent with every turn).
 */
export function checkToolset(candidates: readonly unknown[]): ToolsetCheck {
  const problems: string[] = [];
  const tools: FunctionTool[] = [];
  const seen = new Set<string>();
  candidates.forEach((candidate, i) => {
    const parsed = FunctionToolSchema.safeParse(candidate);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push(`tools[${i}].${issue.path.join('.')}: ${issue.message}`);
      return;
    }
    const tool = parsed.data;
    const name = tool.function.name;
    const bytes = specBytes(tool);
    if (bytes > BOUNDS.toolSchemaBytes) {
      const size = Number.isFinite(bytes) ? `${bytes} bytes` : 'nested too deep to write out';
      problems.push(
        `tools[${i}] ${name}: the spec is ${size}, over the ${BOUNDS.toolSchemaBytes}-byte bound`,
      );
    }
    if (seen.has(name)) problems.push(`tools[${i}]: duplicate tool name "${name}"`);
    if (RESERVED_TOOL_NAMES.has(name)) problems.push(`tools[${i}]: "${name}" is reserved by the mock world`);
    seen.add(name);
    const properties = Object.keys(tool.function.parameters.properties);
    for (const required of tool.function.parameters.required ?? []) {
      if (!properties.includes(required))
        problems.push(`tools[${i}] ${name}: required "${required}" is not a property`);
    }
    try {
      ajv.compile(tool.function.parameters);
    } catch (error) {
      problems.push(
        `tools[${i}] ${name}: parameters is not a valid JSON schema (${(error as Error).message})`,
      );
    }
    tools.push(tool);
  });
  if (candidates.length === 0) problems.push('the tool set is empty');
  return problems.length ? { ok: false, problems } : { ok: true, tools };
}

/** UTF-8 size of a tool spec as JSON; Infinity for one too deep to write (an imported file's). */
function specBytes(tool: FunctionTool): number {
  try {
    return utf8Bytes(JSON.stringify(tool));
  } catch {
    return Number.POSITIVE_INFINITY; // RangeError: maximum call stack size
  }
}

/**
 * A deterministic fix of a generated tool set that leaves its meaning unchanged, recorded with the
 * task: an exact copy of an earlier tool dropped; a tool renamed because an earlier, different tool
 * had its name; a name listed twice in `required` listed once; a `required` name that is no
 * property declared as one that takes any value (which is what JSON Schema reads it as).
 */
export type ToolRepair =
  | { readonly action: 'dropped_copy'; readonly index: number; readonly name: string }
  | { readonly action: 'renamed'; readonly index: number; readonly name: string; readonly to: string }
  | {
      readonly action: 'deduped_required' | 'declared_required';
      readonly index: number;
      readonly name: string;
      readonly parameters: string[];
    };

/**
 * Repairs a generated tool set before {@link checkToolset}, where the repair keeps what the tool
 * set means: in each tool's `required` list, a repeated name is listed once (JSON Schema refuses
 * the repeat, and it adds nothing) and a name that is no property becomes a property of any value
 * (`{}`: JSON Schema already required it with any value; declared, the agent's grammar lets it
 * be sent); then a tool identical to an earlier one is dropped and a different tool under a taken
 * name gets the first free `<name>_2`, `<name>_3`, ... (cut to stay within 64 characters). Same
 * input, same output. Candidates without a string name are left for the check to name.
 */
export function repairToolset(candidates: readonly unknown[]): {
  readonly tools: unknown[];
  readonly repairs: ToolRepair[];
} {
  const nameOf = (candidate: unknown): string | undefined => {
    const name = (candidate as { function?: { name?: unknown } } | null)?.function?.name;
    return typeof name === 'string' ? name : undefined;
  };
  const taken = new Set(candidates.map(nameOf).filter((n): n is string => n !== undefined));
  const firstByName = new Map<string, string>();
  const tools: unknown[] = [];
  const repairs: ToolRepair[] = [];
  candidates.forEach((original, index) => {
    const name = nameOf(original);
    const candidate = name === undefined ? original : repairRequired(original, index, name, repairs);
    const first = name === undefined ? undefined : firstByName.get(name);
    if (name === undefined || first === undefined) {
      if (name !== undefined) firstByName.set(name, canonicalJson(candidate));
      tools.push(candidate);
      return;
    }
    if (first === canonicalJson(candidate)) {
      repairs.push({ action: 'dropped_copy', index, name });
      return;
    }
    let to = name;
    for (let n = 2; taken.has(to); n++) to = `${name.slice(0, 64 - `_${n}`.length)}_${n}`;
    taken.add(to);
    firstByName.set(to, canonicalJson(candidate));
    const renamed = candidate as { function: Record<string, unknown> };
    tools.push({ ...renamed, function: { ...renamed.function, name: to } });
    repairs.push({ action: 'renamed', index, name, to });
  });
  return { tools, repairs };
}

/** The tool with each `required` name once and declared as a property; each change recorded. */
function repairRequired(tool: unknown, index: number, name: string, repairs: ToolRepair[]): unknown {
  const fn = (tool as { function: Record<string, unknown> }).function;
  const parameters = fn.parameters as { properties?: unknown; required?: unknown } | undefined;
  const required = parameters?.required;
  const properties = parameters?.properties ?? {};
  if (!Array.isArray(required) || !required.every((r): r is string => typeof r === 'string')) return tool;
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) return tool;
  const unique = [...new Set(required)];
  const repeated = [...new Set(required.filter((r, i) => required.indexOf(r) !== i))];
  const undeclared = unique.filter((r) => !Object.hasOwn(properties, r));
  if (repeated.length === 0 && undeclared.length === 0) return tool;
  if (repeated.length) repairs.push({ action: 'deduped_required', index, name, parameters: repeated });
  if (undeclared.length) repairs.push({ action: 'declared_required', index, name, parameters: undeclared });
  const declared = { ...properties, ...Object.fromEntries(undeclared.map((r) => [r, {}])) };
  return {
    ...(tool as object),
    function: { ...fn, parameters: { ...parameters, properties: declared, required: unique } },
  };
}

/** JSON with object keys sorted, so two specs that differ only in key order count as copies. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}
