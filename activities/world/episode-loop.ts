import type {
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import type pg from 'pg';
import { BOUNDS, utf8Bytes } from '../../schemas/bounds.js';
import type { EndReason, EpisodeInput } from '../../schemas/episode-input.js';
import { cutWithMarker } from '../llm/answer-bounds.js';
import type { ModelClient } from '../llm/index.js';
import type { EpisodeProgress } from './episode-summary.js';
import { checkpointEpisode, openEpisode, type EpisodeState } from './episode-store.js';
import { callSettings } from './model-roles.js';
import { tooManyCallsObservation } from './observations.js';
import { agentForTurn, isCutTurn, responseTokensAfter } from './response-length.js';
import { offPolicyTurn } from './served-version.js';
import { assistantEntry, toolCallsOf, type AgentToolCall } from './transcript.js';
import type { TurnOffer } from './turn-tool-choice.js';

/** Callbacks of one episode run. */
export interface EpisodeHooks {
  /** Called after every checkpointed turn (the activity heartbeats here). */
  readonly onTurn?: (progress: EpisodeProgress) => void | Promise<void>;
  /** Stops the episode between turns and cancels model calls in flight; it rejects with the reason. */
  readonly signal?: AbortSignal;
}

/** The answers to the (at most `toolCallsPerTurn`) calls of one assistant turn, in call order. */
export interface TurnAnswers {
  readonly toolMessages: ChatCompletionToolMessageParam[];
  /** Calls of task tools (the mock world does not count `ask_user` questions here). */
  readonly toolCalls: number;
  readonly userQuestions: number;
  readonly toolErrors: number;
  /** The user ended the conversation. */
  readonly userStopped: boolean;
  /** Set when a simulator gave no usable answer and the world settings say reject: why. */
  readonly rejected?: string;
}

/** What differs between the episodes mockworld plays: what the agent sees and who answers its calls. */
export interface EpisodeEnvironment {
  /** The opening messages (system prompt and task) of a new episode. */
  readonly opening: readonly ChatCompletionMessageParam[];
  /** The tools offered on turn `turn` (1-based) and the request's tool choice. */
  offer(turn: number): TurnOffer;
  /** Answers one turn's calls; `transcript` ends with the assistant turn that made them. */
  answer(
    transcript: readonly ChatCompletionMessageParam[],
    calls: readonly AgentToolCall[],
    signal: AbortSignal | undefined,
  ): Promise<TurnAnswers>;
}

/**
 * The one agent loop of mockworld (seed §3.2): the mock world's episodes, the reasoning rollouts and
 * every evaluation trial that plays a policy run through it, so the bounds below hold for all.
 * Runs (or resumes) an episode: agent turns until a final answer, the user's stop, a rejection, a
 * length limit or `maxTurns`. The transcript and counters are checkpointed in `episodes` after every
 * turn; a re-run continues from the last checkpoint, and the model calls it repeats are served from
 * the cache. An aborted `signal` stops it with the signal's reason.
 *
 * Bounded (schemas/bounds.ts): an agent turn's text is cut at `agentTurnBytes`, calls past
 * `toolCallsPerTurn` are answered unrun, and a turn that would take the transcript past
 * `transcriptBytes` is not kept: the episode ends there (`transcript_limit`, with the sizes).
 */
export async function playEpisode(
  deps: { readonly pool: pg.Pool; readonly models: ModelClient },
  input: EpisodeInput,
  environment: EpisodeEnvironment,
  hooks: EpisodeHooks = {},
): Promise<EpisodeState> {
  const { pool } = deps;
  const { signal } = hooks;
  signal?.throwIfAborted();
  let state = await openEpisode(pool, input, environment.opening);
  while (state.endReason === null) {
    if (state.turns >= input.maxTurns) {
      // Only on resume with a smaller maxTurns than the checkpoint's run: close the episode as is.
      const closed = { ...state, endReason: 'max_turns' as const };
      await checkpointEpisode(pool, state.turns, closed);
      return closed;
    }
    signal?.throwIfAborted();
    const next = await playTurn(deps.models, input, environment, state, signal);
    await checkpointEpisode(pool, state.turns, next);
    state = next;
    await hooks.onTurn?.(progressOf(state));
  }
  return state;
}

/** One agent turn and the answers to its calls: the state to checkpoint after it. */
async function playTurn(
  models: ModelClient,
  input: EpisodeInput,
  environment: EpisodeEnvironment,
  state: EpisodeState,
  signal: AbortSignal | undefined,
): Promise<EpisodeState> {
  const turn = state.turns + 1;
  const agent = agentForTurn(input.agent, input.maxResponseTokens, state.responseTokens);
  const offer = environment.offer(turn);
  const reply = await models.chat({
    ...callSettings(agent, input.agentRoleName, { runId: input.runId, signal }),
    messages: state.messages,
    tools: offer.tools,
    toolChoice: offer.toolChoice,
    sampleIndex: input.sampleIndex,
    policyVersion: input.policyVersion,
  });
  const assistant = boundedTurn(assistantEntry(reply.message, turn));
  const calls = toolCallsOf(assistant);
  const run = calls.slice(0, BOUNDS.toolCallsPerTurn);
  const answers = await environment.answer([...state.messages, assistant], run, signal);
  const unrun = calls.slice(run.length).map((call): ChatCompletionToolMessageParam => ({
    role: 'tool',
    tool_call_id: call.id,
    content: tooManyCallsObservation(call.name, BOUNDS.toolCallsPerTurn),
  }));
  const openingTokens = state.openingTokens ?? reply.usage.promptTokens;
  const responseTokens = responseTokensAfter(openingTokens, reply.usage);
  // A turn cut at its token limit is never a final answer; nor is a response past its cap.
  const endReason: EndReason | null = answers.rejected
    ? 'simulator_failed'
    : isCutTurn(reply.finishReason)
      ? 'length_limit'
      : calls.length === 0
        ? 'final_answer'
        : answers.userStopped
          ? 'user_stop'
          : input.maxResponseTokens !== undefined && responseTokens >= input.maxResponseTokens
            ? 'length_limit'
            : turn >= input.maxTurns
              ? 'max_turns'
              : null;
  const next: EpisodeState = {
    episodeId: input.episodeId,
    messages: [...state.messages, assistant, ...answers.toolMessages, ...unrun],
    turns: turn,
    toolCalls: state.toolCalls + answers.toolCalls,
    userQuestions: state.userQuestions + answers.userQuestions,
    toolErrors: state.toolErrors + answers.toolErrors + unrun.length,
    endReason,
    endDetail: answers.rejected ?? null,
    openingTokens,
    responseTokens,
    // The first turn another policy version answered: the rollout is not trained on as on-policy.
    offPolicy: state.offPolicy ?? offPolicyTurn(input.policyVersion, reply.servedVersion, turn) ?? null,
  };
  const bytes = utf8Bytes(JSON.stringify(next.messages));
  if (bytes <= BOUNDS.transcriptBytes) return next;
  // The transcript as of the last turn is kept whole; this turn's calls are in the ledger.
  return {
    ...state,
    endReason: 'transcript_limit',
    endDetail: `turn ${turn} would have made the transcript ${bytes} bytes, over the ${BOUNDS.transcriptBytes}-byte bound`,
  };
}

/** The agent's turn with its text cut at the bound (tool calls are bounded as they are answered). */
export function boundedTurn<T extends { content?: unknown }>(entry: T): T {
  return typeof entry.content === 'string' && entry.content.length > BOUNDS.agentTurnBytes / 3
    ? { ...entry, content: cutWithMarker(entry.content, BOUNDS.agentTurnBytes) }
    : entry;
}

/** An episode's counters as its summary and heartbeats report them. */
export function progressOf(state: EpisodeState): EpisodeProgress {
  return {
    episodeId: state.episodeId,
    turns: state.turns,
    toolCalls: state.toolCalls,
    userQuestions: state.userQuestions,
    toolErrors: state.toolErrors,
    endReason: state.endReason,
  };
}
