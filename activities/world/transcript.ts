import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { ASK_USER_TOOL, ASK_USER_TOOL_NAME } from './ask-user.js';
import { validateToolCall } from './tool-validation.js';

/** A function call of an assistant message, whatever shape the server sent it in. */
export interface AgentToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** One question of the agent and the simulated user's answer. */
export interface UserExchange {
  readonly question: string;
  readonly answer: string;
}

/**
 * The assistant message as it is kept in the transcript and sent back to the agent: role,
 * content and function tool calls only (no refusal or audio fields a server may add). Calls
 * without an id get `call_<turn>_<i>`, since every tool message must name the call it answers.
 */
export function assistantEntry(
  message: ChatCompletionMessage,
  turn: number,
): ChatCompletionAssistantMessageParam {
  const calls: ChatCompletionMessageFunctionToolCall[] = (message.tool_calls ?? []).map((call, i) => {
    // Custom (free-form) tools are never offered; a server that sends one anyway gets it read as a function.
    const fn =
      call.type === 'custom' ? { name: call.custom.name, arguments: call.custom.input } : call.function;
    return {
      id: call.id || `call_${turn}_${i}`,
      type: 'function',
      function: { name: fn?.name ?? '', arguments: fn?.arguments ?? '' },
    };
  });
  return calls.length > 0
    ? { role: 'assistant', content: message.content ?? null, tool_calls: calls }
    : { role: 'assistant', content: message.content ?? '' };
}

/** The function calls of a transcript's assistant message. */
export function toolCallsOf(message: ChatCompletionAssistantMessageParam): AgentToolCall[] {
  return (message.tool_calls ?? []).map((call) =>
    call.type === 'custom'
      ? { id: call.id, name: call.custom.name, arguments: call.custom.input }
      : { id: call.id, name: call.function.name, arguments: call.function.arguments },
  );
}

/** Text of a message's content (string, or the text parts of an array). */
function textOf(content: ChatCompletionMessageParam['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('');
}

/**
 * The agent–user dialogue so far, read back from the transcript: every valid `ask_user` call with
 * the tool message that answered it. Derived rather than stored, so a resumed episode shows the
 * user simulator exactly the dialogue of its checkpoint.
 */
export function userDialogue(messages: readonly ChatCompletionMessageParam[]): UserExchange[] {
  const answers = new Map<string, string>();
  for (const m of messages) if (m.role === 'tool') answers.set(m.tool_call_id, textOf(m.content));
  const dialogue: UserExchange[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const call of toolCallsOf(m)) {
      if (call.name !== ASK_USER_TOOL_NAME) continue;
      const check = validateToolCall([ASK_USER_TOOL], call);
      const answer = answers.get(call.id);
      if (check.ok && answer !== undefined) {
        dialogue.push({ question: String(check.args['question']), answer });
      }
    }
  }
  return dialogue;
}
