import { BOUNDS } from '../../schemas/bounds.js';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import {
  StructuredOutputRejectedError,
  type ChatCompletionMessageParam,
  type ModelClient,
} from '../llm/index.js';
import { loadTemplate, renderTemplate, type TemplateChoice } from '../templates/templates.js';
import { callSettings, USER_SIMULATOR_ROLE, type CallContext } from './model-roles.js';
import type { UserExchange } from './transcript.js';

/** What the simulated user writes to end the conversation. */
export const STOP_MARKER = '###STOP###';

/** Name under which an out-of-bounds user answer is recorded in `llm_rejections`. */
export const USER_TURN_NAME = 'UserTurn';

/**
 * Sample indices tried for one answer: an answer over {@link BOUNDS.userTurnBytes} is recorded as
 * a rejection and drawn again; the answers are cached, so every rollout with the same dialogue
 * makes the same draws and gets the same answer.
 */
const USER_DRAWS = 3;

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
 * stay in its context and it does not contradict itself. Calls start at sample 0, so the same
 * dialogue gets the same answer in every rollout and on every retry (from the cache). An answer
 * over {@link BOUNDS.userTurnBytes} is drawn again (sample 1, 2); when every draw is out of
 * bounds, {@link StructuredOutputRejectedError} (each draw recorded in `llm_rejections`).
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
  const text = await boundedAnswer(options, messages);
  const stop = text.includes(STOP_MARKER);
  return { answer: text.split(STOP_MARKER).join('').trim(), stop };
}

async function boundedAnswer(
  options: UserSimulatorOptions,
  messages: ChatCompletionMessageParam[],
): Promise<string> {
  for (let draw = 0; ; draw++) {
    try {
      const answer = await options.models.text(
        { ...callSettings(options.role, USER_SIMULATOR_ROLE, options), messages, sampleIndex: draw },
        USER_TURN_NAME,
        BOUNDS.userTurnBytes,
      );
      return answer.text;
    } catch (error) {
      if (!(error instanceof StructuredOutputRejectedError) || draw + 1 >= USER_DRAWS) throw error;
    }
  }
}
