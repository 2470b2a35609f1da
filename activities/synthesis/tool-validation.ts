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
 * task: an exact copy of an earlier tool dropped, or a tool renamed because an earlier, different
 * tool had its name.
 */
export type ToolRepair =
  | { readonly action: 'dropped_copy'; readonly index: number; readonly name: string }
  | { readonly action: 'renamed'; readonly index: number; readonly name: string; readonly to: string };

/**
 * Repairs duplicate tool names before {@link checkToolset}: a tool identical to an earlier one is
 * dropped; a different tool under a taken name gets the first free `<name>_2`, `<name>_3`, ...
 * (cut to stay within 64 characters). Same input, same output. Candidates without a string name
 * are left for the check to name.
 */
export function repairDuplicateNames(candidates: readonly unknown[]): {
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
  candidates.forEach((candidate, index) => {
    const name = nameOf(candidate);
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

/** JSON with object keys sorted, so two specs that differ only in key order count as copies. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}
