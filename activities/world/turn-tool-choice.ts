import type { ChatCompletionToolChoiceOption } from '../llm/index.js';
import type { FunctionTool } from '../../schemas/function-tool.js';
import type { TurnToolChoice } from '../../schemas/synthesis-spec.js';
import { ASK_USER_TOOL, ASK_USER_TOOL_NAME } from './ask-user.js';

/** The tools offered on one agent turn and the request's `tool_choice` (unset: the server's auto). */
export interface TurnOffer {
  readonly tools: readonly FunctionTool[];
  readonly toolChoice?: ChatCompletionToolChoiceOption;
}

/**
 * What one turn's {@link TurnToolChoice} sends. `task_tool` offers only the task's tools with
 * `required`, since OpenAI's `tool_choice` cannot say "any tool but ask_user"; the calls are still
 * checked against every tool of the episode. A task without tools of its own falls back to auto.
 */
export function turnOffer(choice: TurnToolChoice, taskTools: readonly FunctionTool[]): TurnOffer {
  const all = [...taskTools, ASK_USER_TOOL];
  switch (choice) {
    case 'auto':
      return { tools: all };
    case 'ask_user':
      return { tools: all, toolChoice: { type: 'function', function: { name: ASK_USER_TOOL_NAME } } };
    case 'task_tool':
      return taskTools.length > 0 ? { tools: taskTools, toolChoice: 'required' } : { tools: all };
    case 'answer':
      return { tools: all, toolChoice: 'none' };
  }
}
