/**
 * From an OpenAI chat request to what the model sees and back: the chat history, the JSON Schema
 * that constrains the answer, and the mapping of the constrained answer to `message.content` or
 * `message.tool_calls`.
 *
 * Tool calling works without any model-specific template: the tools are described in the system
 * message, and the answer is constrained to one JSON object, either
 * `{"tool_call": {"name": <one of the tool names>, "arguments": <that tool's parameters>}}` or
 * `{"content": <text, or the response_format schema>}`. Earlier tool calls in the conversation are
 * shown to the model in the same form, and tool results as user turns.
 */
import { randomBytes } from 'node:crypto';
import type { ChatHistoryItem, GbnfJsonSchema } from 'node-llama-cpp';
import { badRequest } from './errors.js';
import { toGbnfJsonSchema, toGrammarSchema, withDefs, type GrammarSchema } from './json-schema-grammar.js';
import type { ChatCompletionRequest, ChatMessage, Tool } from '../../schemas/openai-chat.js';

/** How the answer of one request is constrained. */
export type OutputMode =
  | { readonly kind: 'text' }
  | { readonly kind: 'json'; readonly grammar: GrammarSchema | 'any' }
  | { readonly kind: 'tools'; readonly grammar: GrammarSchema; readonly contentIsJson: boolean };

/** What the model is asked for: history to complete and the constraint on its answer. */
export interface ChatPlan {
  readonly history: ChatHistoryItem[];
  readonly mode: OutputMode;
}

/** One OpenAI tool call in a response. */
export interface ToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

/** A finished choice as the API returns it. */
export interface AssistantAnswer {
  readonly content: string | null;
  readonly tool_calls?: ToolCall[];
  readonly finish_reason: 'stop' | 'length' | 'tool_calls';
}

/** Builds the history and output constraint of a validated request. */
export function planChat(request: ChatCompletionRequest): ChatPlan {
  const format = request.response_format;
  const contentSchema: GrammarSchema | 'any' | undefined =
    format?.type === 'json_object'
      ? 'any'
      : format?.type === 'json_schema'
        ? format.json_schema.schema
          ? toGrammarSchema(format.json_schema.schema)
          : 'any'
        : undefined;

  const choice = request.tool_choice ?? 'auto';
  const offered =
    choice === 'none'
      ? []
      : typeof choice === 'object'
        ? (request.tools ?? []).filter((t) => t.function.name === choice.function.name)
        : (request.tools ?? []);
  const toolsMode = offered.length > 0;
  const mustCall = choice === 'required' || typeof choice === 'object';

  const history = toHistory(request.messages, toolsMode);
  if (toolsMode) addSystemText(history, toolInstructions(offered, mustCall, contentSchema !== undefined));
  else if (contentSchema !== undefined) addSystemText(history, 'Answer with one JSON object only.');
  history.push({ type: 'model', response: [] });

  if (toolsMode) {
    return {
      history,
      mode: {
        kind: 'tools',
        grammar: toolsSchema(offered, mustCall, contentSchema),
        contentIsJson: !!contentSchema,
      },
    };
  }
  if (contentSchema !== undefined) return { history, mode: { kind: 'json', grammar: contentSchema } };
  return { history, mode: { kind: 'text' } };
}

/**
 * Maps the model's raw answer to the API's message. A constrained answer cut short by `max_tokens`
 * cannot be parsed; it is returned as text with finish reason `length`, like OpenAI does.
 */
export function toAnswer(mode: OutputMode, text: string, truncated: boolean): AssistantAnswer {
  if (mode.kind !== 'tools') return { content: text, finish_reason: truncated ? 'length' : 'stop' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { content: text, finish_reason: truncated ? 'length' : 'stop' };
  }
  const answer = parsed as { tool_call?: { name: string; arguments: unknown }; content?: unknown };
  if (answer.tool_call) {
    const call: ToolCall = {
      id: `call_${randomBytes(12).toString('hex')}`,
      type: 'function',
      function: { name: answer.tool_call.name, arguments: JSON.stringify(answer.tool_call.arguments ?? {}) },
    };
    return { content: null, tool_calls: [call], finish_reason: 'tool_calls' };
  }
  const content = mode.contentIsJson ? JSON.stringify(answer.content) : String(answer.content ?? '');
  return { content, finish_reason: 'stop' };
}

/** The union every tools answer must match. */
function toolsSchema(
  tools: readonly Tool[],
  mustCall: boolean,
  content: GrammarSchema | 'any' | undefined,
): GrammarSchema {
  const defs: Record<string, GbnfJsonSchema> = {};
  const terminals: Record<string, string> = {
    ...(content === undefined || content === 'any' ? {} : content.terminals),
  };
  const branches: GbnfJsonSchema[] = tools.map((tool, i) => {
    const parameters = tool.function.parameters ?? { type: 'object', properties: {} };
    const translated = toGbnfJsonSchema(parameters, { defPrefix: `t${i}_` });
    Object.assign(defs, translated.defs);
    Object.assign(terminals, translated.terminals);
    return {
      type: 'object',
      properties: {
        tool_call: {
          type: 'object',
          properties: { name: { const: tool.function.name }, arguments: translated.schema },
        },
      },
    } as GbnfJsonSchema;
  });
  if (!mustCall) {
    const value: GbnfJsonSchema =
      content === undefined
        ? { type: 'string' }
        : content === 'any'
          ? { type: 'object', additionalProperties: true }
          : content.schema;
    branches.push({ type: 'object', properties: { content: value } } as GbnfJsonSchema);
  }
  return { schema: withDefs({ oneOf: branches }, defs), terminals };
}

function toolInstructions(tools: readonly Tool[], mustCall: boolean, jsonContent: boolean): string {
  const list = tools.map((t) =>
    JSON.stringify({
      name: t.function.name,
      description: t.function.description,
      parameters: t.function.parameters,
    }),
  );
  const call = '{"tool_call": {"name": "<tool name>", "arguments": {<arguments>}}}';
  const reply = jsonContent ? '{"content": <your JSON answer>}' : '{"content": "<your reply>"}';
  return [
    'You can call these tools:',
    ...list,
    '',
    mustCall
      ? `Call one tool now. Answer with exactly one JSON object: ${call}`
      : `Answer with exactly one JSON object: ${call} to call a tool, or ${reply} to reply to the user.`,
  ].join('\n');
}

function addSystemText(history: ChatHistoryItem[], text: string): void {
  const first = history[0];
  if (first?.type === 'system' && typeof first.text === 'string') first.text = `${first.text}\n\n${text}`;
  else history.unshift({ type: 'system', text });
}

/** Converts OpenAI messages to node-llama-cpp history; in tools mode assistant turns show the answer format. */
function toHistory(messages: readonly ChatMessage[], toolsMode: boolean): ChatHistoryItem[] {
  const names = new Map<string, string>();
  const history: ChatHistoryItem[] = [];
  messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text: text(message.content) });
        return;
      case 'user':
        history.push({ type: 'user', text: text(message.content) });
        return;
      case 'assistant': {
        const parts: string[] = [];
        const content = message.content == null ? '' : text(message.content);
        for (const call of message.tool_calls ?? []) {
          names.set(call.id, call.function.name);
          parts.push(
            JSON.stringify({
              tool_call: { name: call.function.name, arguments: parseArguments(call, index) },
            }),
          );
        }
        if (content || parts.length === 0) parts.unshift(toolsMode ? JSON.stringify({ content }) : content);
        history.push({ type: 'model', response: [parts.join('\n')] });
        return;
      }
      case 'tool': {
        const name = names.get(message.tool_call_id);
        if (!name) {
          throw badRequest(
            `messages.${index}.tool_call_id '${message.tool_call_id}' answers no earlier assistant tool call`,
            `messages.${index}.tool_call_id`,
          );
        }
        history.push({
          type: 'user',
          text: `Result of tool ${name} (call ${message.tool_call_id}):\n${text(message.content)}`,
        });
        return;
      }
      default: {
        const unknown: never = message;
        throw badRequest(
          `unsupported role ${JSON.stringify(unknown)}; use system, developer, user, assistant or tool`,
        );
      }
    }
  });
  return history;
}

function parseArguments(call: { function: { arguments: string } }, index: number): unknown {
  try {
    return JSON.parse(call.function.arguments || '{}');
  } catch {
    throw badRequest(
      `messages.${index}.tool_calls: arguments must be a JSON string, got ${JSON.stringify(call.function.arguments)}`,
      `messages.${index}.tool_calls`,
    );
  }
}

function text(content: string | readonly { type: 'text'; text: string }[]): string {
  return typeof content === 'string' ? content : content.map((p) => p.text).join('');
}
