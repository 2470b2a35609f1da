import { z } from 'zod';
import { BOUNDS } from '../../schemas/bounds.js';
import { storableJson } from '../store/storable.js';
import { isOversized, outOfBounds } from './answer-bounds.js';
import type { RejectionReason } from './errors.js';
import type { ChatCompletionMessage } from './types.js';

/** Default cap on a structured output: larger answers are rejected before parsing (claim-check budget). */
export const DEFAULT_MAX_STRUCTURED_BYTES = BOUNDS.answerBytes;

/** Bound on the validation details kept in errors and repair prompts. */
const DETAIL_LIMIT = 4000;

/** The outcome of checking one output against a schema. */
export type Checked<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: RejectionReason; readonly detail: string };

/**
 * The `response_format` asking for `schema` by name. OpenAI requires names matching
 * `^[A-Za-z0-9_-]{1,64}$`; a bad name is a programming error and throws at once.
 */
export function jsonSchemaResponseFormat(schema: z.ZodType, name: string) {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new TypeError(`Structured output name "${name}" must match ^[A-Za-z0-9_-]{1,64}$`);
  }
  // "$schema" is noise for the model and some servers reject unknown top-level keywords.
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(schema) as Record<string, unknown>;
  return {
    type: 'json_schema' as const,
    json_schema: { name, schema: jsonSchema, strict: isStrictCompatible(jsonSchema) },
  };
}

/**
 * Whether OpenAI's strict mode accepts a JSON schema: every object closed
 * (`additionalProperties: false`) with all its properties required, and no open sub-schema.
 * Strict mode refuses other schemas with a 400, so those are sent non-strict: servers with
 * guided decoding (vLLM, SGLang, llama.cpp) still enforce them, and validation plus the bounded
 * repair catch the rest.
 */
export function isStrictCompatible(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return schema !== true;
  const node = schema as Record<string, unknown>;
  if (Object.keys(node).length === 0) return false; // {} admits anything
  if (node.type === 'object' || 'properties' in node) {
    const properties = (node.properties ?? {}) as Record<string, unknown>;
    const required = new Set((node.required as string[] | undefined) ?? []);
    if (node.additionalProperties !== false) return false;
    if (Object.keys(properties).some((key) => !required.has(key))) return false;
  }
  if (node.type === 'array' && (node.items === undefined || !isStrictCompatible(node.items))) return false;
  const children: unknown[] = [
    ...Object.values((node.properties ?? {}) as Record<string, unknown>),
    ...((node.anyOf as unknown[] | undefined) ?? []),
    ...((node.oneOf as unknown[] | undefined) ?? []),
    ...((node.allOf as unknown[] | undefined) ?? []),
    ...Object.values((node.$defs ?? node.definitions ?? {}) as Record<string, unknown>),
  ];
  if (node.type !== 'array' && node.items !== undefined) children.push(node.items);
  return children.every(isStrictCompatible);
}

/** Extracted JSON, or why there is none. */
export type Extracted =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly reason: 'not_json' | 'truncated'; readonly detail: string };

/**
 * Finds the JSON in a model's text: the whole text, else a ```json fenced block, else the first
 * balanced `{...}` object (models often wrap JSON in prose). An object that opens but never
 * closes is reported as truncated.
 */
export function extractJson(text: string): Extracted {
  const trimmed = text.trim();
  const whole = tryParse(trimmed);
  if (whole.ok) return whole;
  const fence = /```(?:json|JSON)?[ \t]*\r?\n?([\s\S]*?)```/.exec(trimmed);
  if (fence?.[1] !== undefined) {
    const fenced = tryParse(fence[1].trim());
    if (fenced.ok) return fenced;
  }
  const start = trimmed.indexOf('{');
  if (start < 0) return { ok: false, reason: 'not_json', detail: 'the answer contains no JSON object' };
  const end = balancedObjectEnd(trimmed, start);
  if (end < 0)
    return { ok: false, reason: 'truncated', detail: 'the JSON object is not closed (output cut off?)' };
  const object = tryParse(trimmed.slice(start, end + 1));
  return object.ok ? object : { ok: false, reason: 'not_json', detail: `invalid JSON: ${object.detail}` };
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false; detail: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}

/** Index of the `}` closing the object opened at `start`, or -1; braces inside strings are skipped. */
function balancedObjectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/**
 * Checks a model message against `schema`: content present, at most `maxBytes` and nested at most
 * `BOUNDS.answerDepth` deep (checked on the text, before parsing), JSON (see
 * {@link extractJson}), and schema-valid. An unparseable answer that stopped on the token limit is
 * reported as truncated.
 */
export function checkStructured<S extends z.ZodType>(
  message: ChatCompletionMessage,
  finishReason: string,
  schema: S,
  maxBytes: number,
): Checked<z.output<S>> {
  const content = message.content;
  if (typeof content !== 'string' || content.trim() === '') {
    const why = message.refusal
      ? `the model refused: ${message.refusal}`
      : message.tool_calls?.length
        ? 'the model answered with tool calls instead of JSON'
        : 'the answer is empty';
    return { ok: false, reason: 'no_content', detail: bounded(why) };
  }
  if (isOversized(finishReason)) {
    return {
      ok: false,
      reason: 'too_large',
      detail: `the answer is over the ${BOUNDS.answerBytes}-byte bound (stored cut)`,
    };
  }
  // Size and nesting before parsing: a 5,000-deep array parses, then breaks every recursive step after.
  const out = outOfBounds(content, { maxBytes, json: true });
  if (out) return { ok: false, reason: out.reason, detail: out.detail };
  const extracted = extractJson(content);
  if (!extracted.ok) {
    const reason = finishReason === 'length' ? 'truncated' : extracted.reason;
    const suffix = finishReason === 'length' ? ' (generation stopped at the token limit)' : '';
    return { ok: false, reason, detail: bounded(extracted.detail + suffix) };
  }
  // JSON escapes can spell NUL or a lone surrogate, which no stage could then store.
  const parsed = schema.safeParse(storableJson(extracted.value));
  if (!parsed.success)
    return { ok: false, reason: 'schema_invalid', detail: bounded(describeIssues(parsed.error)) };
  return { ok: true, value: parsed.data };
}

/** One line per issue, naming its path, so the model (and a person) can fix each one. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `- at ${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('\n');
}

function bounded(text: string): string {
  return text.length <= DETAIL_LIMIT
    ? text
    : `${text.slice(0, DETAIL_LIMIT)}… (${text.length - DETAIL_LIMIT} more chars)`;
}

/** How much of a bad answer is echoed back in the repair conversation. */
const ECHO_LIMIT = 16_000;

/**
 * The two messages appended for the repair call: the bad answer (bounded, so a 2 MB answer does
 * not become a 2 MB prompt) and a request for corrected JSON naming every problem. The schema is
 * repeated in text for servers that ignore `response_format`.
 */
export function repairMessages(
  badContent: string | null,
  failure: { reason: RejectionReason; detail: string },
  schemaName: string,
  jsonSchema: unknown,
) {
  const content = badContent ?? '';
  const echoed =
    content.length <= ECHO_LIMIT
      ? content
      : `${content.slice(0, ECHO_LIMIT)}\n… [${content.length - ECHO_LIMIT} more characters omitted]`;
  const schemaText = JSON.stringify(jsonSchema);
  const instruction = [
    `Your previous answer cannot be accepted as "${schemaName}" (${failure.reason}):`,
    failure.detail,
    '',
    'Reply with the corrected JSON object only: no prose, no code fences, nothing after it.',
    ...(schemaText.length <= 8000 ? [`It must match this JSON schema: ${schemaText}`] : []),
  ].join('\n');
  return [
    { role: 'assistant' as const, content: echoed || '(empty)' },
    { role: 'user' as const, content: instruction },
  ];
}
