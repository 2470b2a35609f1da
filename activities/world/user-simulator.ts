import type { ModelRole } from '../../schemas/model-endpoint.js';
import type { ChatCompletionMessageParam, ModelClient } from '../llm/index.js';
import { loadTemplate, renderTemplate, type TemplateChoice } from '../templates/templates.js';
import { callSettings, USER_SIMULATOR_ROLE, type CallContext } from './model-roles.js';
import type { UserExchange } from './transcript.js';

/** What the simulated user writes to end the conversation. */
export const STOP_MARKER = '###STOP###';

/** Settings of the user simulator. */
export interface UserSimulatorOptions extends CallContext {
  readonly models: ModelClient;
  readonly role: ModelRole;
  readonly templates: TemplateChoice;
}

/**
 * What the simulated user knows: the request they made (I), their private context (C) and the
 * dialogue so far. Never the tools, the rubric, or anything else of the task.
 */
export interface UserQuestion {
  readonly instruction: string;
  readonly hiddenContext: string;
  readonly dialogue: readonly UserExchange[];
  /** The agent's new question. */
  readonly question: string;
}

/** The simulated user's reply. */
export interface UserReply {
  /** The answer without the stop marker; may be empty when the user only ended the conversation. */
  readonly answer: string;
  /** True when the user ended the conversation. */
  readonly stop: boolean;
}

/**
 * Asks the user simulator (seed §3.2) to answer the agent from C only. The simulator plays the
 * assistant side of its own chat: the agent's questions are its user turns, so earlier answers
 * stay in its context and it does not contradict itself. Calls use sample 0, so the same
 * dialogue gets the same answer in every rollout and on every retry (from the cache).
 */
export async function answerUser(options: UserSimulatorOptions, request: UserQuestion): Promise<UserReply> {
  const template = await loadTemplate('userSimulator', options.templates);
  const system = renderTemplate(template, {
    instruction: request.instruction,
    hiddenContext: request.hiddenContext,
    stopMarker: STOP_MARKER,
  });
  const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: system }];
  for (const exchange of request.dialogue) {
    messages.push(
      { role: 'user', content: exchange.question },
      { role: 'assistant', content: exchange.answer },
    );
  }
  messages.push({ role: 'user', content: request.question });
  const { message } = await options.models.chat({
    ...callSettings(options.role, USER_SIMULATOR_ROLE, options),
    messages,
  });
  const text = message.content ?? '';
  const stop = text.includes(STOP_MARKER);
  return { answer: text.split(STOP_MARKER).join('').trim(), stop };
}
