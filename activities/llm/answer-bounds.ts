/**
 * The one guard every model answer passes before it is parsed or stored: size and nesting depth
 * against the documented bounds (schemas/bounds.ts). It decides nothing about what happens next;
 * each stage says that (repair, another draw, an error observation, a recorded rejection).
 */
import { BOUNDS, jsonTextDepth, utf8Bytes } from '../../schemas/bounds.js';
import type { ChatCompletionMessage } from './types.js';

/**
 * Finish reason the ledger stores for an answer that was over {@link BOUNDS.answerBytes}: its text
 * is kept cut to the bound (so no row is larger) and no stage may use it as an answer.
 */
export const OVERSIZED_FINISH_REASON = 'mockworld_oversized';

/** Why an answer is out of bounds. */
export type OutOfBounds = { readonly reason: 'too_large' | 'too_deep'; readonly detail: string };

/** Whether the ledger marked an answer as cut at the bound. */
export function isOversized(finishReason: string): boolean {
  return finishReason === OVERSIZED_FINISH_REASON;
}

/**
 * Checks answer text against a byte bound and, for text meant to be JSON, the nesting bound;
 * undefined when it is within both.
 */
export function outOfBounds(
  text: string,
  bounds: {
    readonly maxBytes: number;
    readonly json?: boolean;
    readonly maxDepth?: number;
    /** What the text is, for the detail (default `the answer`). */
    readonly what?: string;
  },
): OutOfBounds | undefined {
  const what = bounds.what ?? 'the answer';
  const bytes = utf8Bytes(text);
  if (bytes > bounds.maxBytes) {
    return {
      reason: 'too_large',
      detail: `${what} is ${bytes} bytes, over the ${bounds.maxBytes}-byte bound`,
    };
  }
  if (bounds.json) {
    const maxDepth = bounds.maxDepth ?? BOUNDS.answerDepth;
    if (jsonTextDepth(text, maxDepth) > maxDepth) {
      return { reason: 'too_deep', detail: `${what} nests arrays/objects more than ${maxDepth} levels deep` };
    }
  }
  return undefined;
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, never splitting a surrogate pair. */
export function cutToBytes(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3 || utf8Bytes(text) <= maxBytes) return text;
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return text.slice(0, i);
}

/** The marker an earlier cut left at the end of a text, with the size of the text it cut. */
const EARLIER_CUT = /… \[cut: (\d+) bytes, over the \d+-byte bound\]$/;

/**
 * `text` cut so that it and a marker saying how much was cut fit in `maxBytes`. A text cut before
 * (the ledger cuts answers at its own bound) keeps the size its marker states: the marker always
 * says how large the model's answer was.
 */
export function cutWithMarker(text: string, maxBytes: number): string {
  const bytes = utf8Bytes(text);
  if (bytes <= maxBytes) return text;
  const earlier = EARLIER_CUT.exec(text);
  const original = earlier ? Math.max(bytes, Number(earlier[1])) : bytes;
  const marker = `… [cut: ${original} bytes, over the ${maxBytes}-byte bound]`;
  return cutToBytes(earlier ? text.slice(0, earlier.index) : text, maxBytes - utf8Bytes(marker)) + marker;
}

/**
 * The answer as the ledger keeps it: the fields the stages read (role, content, refusal, function
 * tool calls), each a string, so no server-added field of any shape or depth is stored. Over
 * {@link BOUNDS.answerBytes} (content and arguments together) the content is cut to the bound with
 * a marker stating its size, tool calls are dropped and the finish reason becomes
 * {@link OVERSIZED_FINISH_REASON}.
 */
export function boundedAnswer(
  message: ChatCompletionMessage,
  finishReason: string,
): { message: ChatCompletionMessage; finishReason: string } {
  const content = typeof message.content === 'string' ? message.content : null;
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : undefined;
  const toolCalls = calls?.map((call, i) => {
    const raw = call as unknown as {
      id?: unknown;
      type?: unknown;
      function?: { name?: unknown; arguments?: unknown };
      custom?: { name?: unknown; input?: unknown };
    };
    const fn =
      raw.type === 'custom' ? { name: raw.custom?.name, arguments: raw.custom?.input } : raw.function;
    return {
      id: typeof raw.id === 'string' ? raw.id.slice(0, 200) : `call_${i}`,
      type: 'function' as const,
      function: {
        name: typeof fn?.name === 'string' ? fn.name.slice(0, 200) : '',
        arguments: typeof fn?.arguments === 'string' ? fn.arguments : argumentsText(fn?.arguments),
      },
    };
  });
  const refusal = typeof message.refusal === 'string' ? message.refusal.slice(0, 4_000) : null;
  const bytes =
    (content === null ? 0 : utf8Bytes(content)) +
    (toolCalls ?? []).reduce((sum, c) => sum + utf8Bytes(c.function.arguments) + c.function.name.length, 0);
  if (bytes > BOUNDS.answerBytes) {
    return {
      message: {
        role: 'assistant',
        content: cutWithMarker(content ?? JSON.stringify(toolCalls), BOUNDS.answerBytes),
        refusal,
      } as ChatCompletionMessage,
      finishReason: OVERSIZED_FINISH_REASON,
    };
  }
  return {
    message: {
      role: 'assistant',
      content,
      refusal,
      ...(toolCalls ? { tool_calls: toolCalls } : {}),
    } as ChatCompletionMessage,
    finishReason: typeof finishReason === 'string' ? finishReason.slice(0, 64) : 'stop',
  };
}

/** Arguments a server sent as a JSON value instead of text; one too deep to write out is dropped. */
function argumentsText(value: unknown): string {
  if (value === undefined || value === null) return '';
  try {
    return JSON.stringify(value);
  } catch {
    return ''; // RangeError: nested too deep (the call is then answered as having no valid arguments)
  }
}
