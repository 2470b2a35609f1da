import type {
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import type pg from 'pg';
import { BOUNDS, utf8Bytes } from '../../schemas/bounds.js';
import type { FunctionTool } from '../../schemas/function-tool.js';
import { cutWithMarker } from '../llm/answer-bounds.js';
import { canonicalJson, StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import { getPool } from '../store/db.js';
import { agentSystemPrompt } from './agent-prompt.js';
import { ASK_USER_TOOL, ASK_USER_TOOL_NAME } from './ask-user.js';
import {
  EpisodeInputSchema,
  type EndReason,
  type EpisodeInput,
  type EpisodeInputData,
} from '../../schemas/episode-input.js';
import type { EpisodeProgress, EpisodeSummary } from './episode-summary.js';
import { checkpointEpisode, openEpisode, type EpisodeState } from './episode-store.js';
import { callSettings } from './model-roles.js';
import {
  notRunObservation,
  tooManyCallsObservation,
  toolUnavailableObservation,
  userUnavailableObservation,
} from './observations.js';
import { agentForTurn, isCutTurn, responseTokensAfter } from './response-length.js';
import { offPolicyTurn } from './served-version.js';
import { loadTask, type WorldTask } from './task-store.js';
import { resolveToolCall } from './tool-mapping.js';
import { validateToolCall } from './tool-validation.js';
import { assistantEntry, toolCallsOf, userDialogue, type AgentToolCall } from './transcript.js';
import { turnOffer } from './turn-tool-choice.js';
import { answerUser } from './user-simulator.js';

/** What the runner needs from the worker process. */
export interface EpisodeRunnerDependencies {
  /** PostgreSQL holding `tasks`, `episodes` and `tool_mappings` (migrated). */
  readonly pool: pg.Pool;
  /** The model client; its cache makes repeated calls of a resumed episode free. */
  readonly models: ModelClient;
  /** Newest mapping entries of a tool shown to the tool simulator. Default 40. */
  readonly shownEntries?: number;
}

/** Callbacks of one episode run. */
export interface EpisodeHooks {
  /** Called after every checkpointed turn (the activity heartbeats here). */
  readonly onTurn?: (progress: EpisodeProgress) => void | Promise<void>;
  /** Stops the episode between turns and cancels model calls in flight; it rejects with the reason. */
  readonly signal?: AbortSignal;
}

/** Settings of {@link createEpisodeRunner}: a connection string instead of a pool. */
export interface EpisodeRunnerOptions extends Omit<EpisodeRunnerDependencies, 'pool'> {
  /** PostgreSQL holding `tasks`, `episodes` and `tool_mappings`; the process's shared pool is used. */
  readonly databaseUrl: string;
}

/** Runs episodes against one database with one model client (what an activity holds). */
export interface EpisodeRunner {
  /** {@link runEpisode} with the runner's dependencies. */
  runEpisode(input: EpisodeInputData, hooks?: EpisodeHooks): Promise<EpisodeSummary>;
}

/** Creates a runner on the process's shared pool for `databaseUrl`. */
export function createEpisodeRunner(options: EpisodeRunnerOptions): EpisodeRunner {
  const { databaseUrl, ...rest } = options;
  return { runEpisode: (input, hooks) => runEpisode({ ...rest, pool: getPool(databaseUrl) }, input, hooks) };
}

/** Answers of the tool calls of one assistant message. */
interface TurnOutcome {
  readonly toolMessages: ChatCompletionToolMessageParam[];
  readonly toolCalls: number;
  readonly userQuestions: number;
  readonly toolErrors: number;
  readonly userStopped: boolean;
  /** Set when a simulator gave no usable answer and the world settings say reject: why. */
  readonly rejected?: string;
}

/**
 * Runs (or resumes, or just reports) one episode in the mock world (seed §3.2): agent turns
 * against the simulated tools and user until a final answer, the user's stop marker, or
 * `maxTurns`. The transcript and counters are checkpointed in `episodes` after every turn; a
 * re-run continues from the last checkpoint, and the model calls it repeats (a turn cut off by a
 * crash) are served from the cache. An aborted `signal` stops it with the signal's reason.
 *
 * Bounded (schemas/bounds.ts): an agent turn's text is cut at `agentTurnBytes`, calls past
 * `toolCallsPerTurn` are answered unrun, and a turn that would take the transcript past
 * `transcriptBytes` is not kept: the episode ends there (`transcript_limit`). A simulator that
 * gives no usable answer becomes an error observation or rejects the episode (`simulator_failed`,
 * with `end_detail`), as `input.world` says; it never fails the activity.
 */
export async function runEpisode(
  deps: EpisodeRunnerDependencies,
  data: EpisodeInputData,
  hooks: EpisodeHooks = {},
): Promise<EpisodeSummary> {
  const input = EpisodeInputSchema.parse(data);
  const { pool } = deps;
  const { signal } = hooks;
  signal?.throwIfAborted();
  const task = await loadTask(pool, input.taskId);
  const agentTools = [...task.tools, ASK_USER_TOOL];
  let state = await openEpisode(pool, input, openingMessages(input, task));

  while (state.endReason === null) {
    if (state.turns >= input.maxTurns) {
      // Only on resume with a smaller maxTurns than the checkpoint's run: close the episode as is.
      const closed = { ...state, endReason: 'max_turns' as const };
      await checkpointEpisode(pool, state.turns, closed);
      state = closed;
      break;
    }
    signal?.throwIfAborted();
    const turn = state.turns + 1;
    const agent = agentForTurn(input.agent, input.maxResponseTokens, state.responseTokens);
    const offer = turnOffer(input.turnToolChoice[turn - 1] ?? 'auto', task.tools);
    const answer = await deps.models.chat({
      ...callSettings(agent, input.agentRoleName, { runId: input.runId, signal }),
      messages: state.messages,
      tools: offer.tools,
      toolChoice: offer.toolChoice,
      sampleIndex: input.sampleIndex,
      policyVersion: input.policyVersion,
    });
    const assistant = boundedTurn(assistantEntry(answer.message, turn));
    const calls = toolCallsOf(assistant);
    const outcome = await answerCalls(
      deps,
      input,
      task,
      agentTools,
      [...state.messages, assistant],
      calls,
      signal,
    );
    const openingTokens = state.openingTokens ?? answer.usage.promptTokens;
    const responseTokens = responseTokensAfter(openingTokens, answer.usage);
    // A turn cut at its token limit is never a final answer; nor is a response past its cap.
    const endReason: EndReason | null = outcome.rejected
      ? 'simulator_failed'
      : isCutTurn(answer.finishReason)
        ? 'length_limit'
        : calls.length === 0
          ? 'final_answer'
          : outcome.userStopped
            ? 'user_stop'
            : input.maxResponseTokens !== undefined && responseTokens >= input.maxResponseTokens
              ? 'length_limit'
              : turn >= input.maxTurns
                ? 'max_turns'
                : null;
    let next: EpisodeState = {
      episodeId: input.episodeId,
      messages: [...state.messages, assistant, ...outcome.toolMessages],
      turns: turn,
      toolCalls: state.toolCalls + outcome.toolCalls,
      userQuestions: state.userQuestions + outcome.userQuestions,
      toolErrors: state.toolErrors + outcome.toolErrors,
      endReason,
      endDetail: outcome.rejected ?? null,
      openingTokens,
      responseTokens,
      // The first turn another policy version answered: the rollout is not trained on as on-policy.
      offPolicy: state.offPolicy ?? offPolicyTurn(input.policyVersion, answer.servedVersion, turn) ?? null,
    };
    const bytes = utf8Bytes(JSON.stringify(next.messages));
    if (bytes > BOUNDS.transcriptBytes) {
      // The transcript as of the last turn is kept whole; this turn's calls are in the ledger.
      next = {
        ...state,
        endReason: 'transcript_limit',
        endDetail: `turn ${turn} would have made the transcript ${bytes} bytes, over the ${BOUNDS.transcriptBytes}-byte bound`,
      };
    }
    await checkpointEpisode(pool, state.turns, next);
    state = next;
    await hooks.onTurn?.(progressOf(state));
  }
  return { ...progressOf(state), endReason: state.endReason! };
}

/** The agent's turn with its text cut at the bound (tool calls are bounded as they are answered). */
export function boundedTurn<T extends { content?: unknown }>(entry: T): T {
  return typeof entry.content === 'string' && entry.content.length > BOUNDS.agentTurnBytes / 3
    ? { ...entry, content: cutWithMarker(entry.content, BOUNDS.agentTurnBytes) }
    : entry;
}

/** Why a simulator's failure rejects the episode: which one, which call, and the recorded reason. */
function rejection(simulator: string, name: string, error: StructuredOutputRejectedError): string {
  return `${simulator} gave no usable answer for "${name}" (${error.reason}, recorded as rejection ${error.cacheKey}): ${error.detail}`.slice(
    0,
    BOUNDS.detailChars,
  );
}

/** The system prompt and the instruction I: all the agent is told about the task. */
function openingMessages(input: EpisodeInput, task: WorldTask): ChatCompletionMessageParam[] {
  return [
    { role: 'system', content: agentSystemPrompt(input.templates) },
    { role: 'user', content: task.instruction },
  ];
}

/**
 * Answers each call of one assistant message, in order: `ask_user` by the user simulator, task
 * tools by the mapping (or the simulator), bad calls by an error observation. After the user
 * ends the conversation the remaining calls are answered without being run, so the transcript
 * stays well-formed (every call has its tool message).
 */
async function answerCalls(
  deps: EpisodeRunnerDependencies,
  input: EpisodeInput,
  task: WorldTask,
  agentTools: readonly FunctionTool[],
  transcript: ChatCompletionMessageParam[],
  calls: readonly AgentToolCall[],
  signal: AbortSignal | undefined,
): Promise<TurnOutcome> {
  const context = { runId: input.runId, signal, models: deps.models, templates: input.templates };
  const toolMessages: ChatCompletionToolMessageParam[] = [];
  let toolCalls = 0;
  let userQuestions = 0;
  let toolErrors = 0;
  let userStopped = false;
  let rejected: string | undefined;
  for (const [i, call] of calls.entries()) {
    if (userStopped || rejected !== undefined) {
      const why = rejected !== undefined ? 'the episode was rejected' : undefined;
      toolMessages.push({ role: 'tool', tool_call_id: call.id, content: notRunObservation(call.name, why) });
      continue;
    }
    if (i >= BOUNDS.toolCallsPerTurn) {
      toolErrors += 1;
      toolMessages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: tooManyCallsObservation(call.name, BOUNDS.toolCallsPerTurn),
      });
      continue;
    }
    let content: string;
    const isQuestion = call.name === ASK_USER_TOOL_NAME;
    if (!isQuestion) toolCalls += 1;
    const check = validateToolCall(agentTools, call);
    if (!check.ok) {
      toolErrors += 1;
      content = check.observation;
    } else if (isQuestion) {
      userQuestions += 1;
      try {
        const reply = await answerUser(
          { ...context, role: input.userSimulator },
          {
            instruction: task.instruction,
            hiddenContext: task.hiddenContext,
            dialogue: userDialogue([...transcript, ...toolMessages]),
            question: String(check.args['question']),
          },
        );
        userStopped = reply.stop;
        content = reply.answer || (reply.stop ? '(the user ended the conversation)' : '(no answer)');
      } catch (error) {
        if (!(error instanceof StructuredOutputRejectedError)) throw error;
        toolErrors += 1;
        content = userUnavailableObservation();
        if (input.world.userSimulatorFailure === 'reject') {
          rejected = rejection('the user simulator', call.name, error);
        }
      }
    } else {
      try {
        const { entry } = await resolveToolCall(
          { ...context, role: input.toolSimulator, pool: deps.pool, shownEntries: deps.shownEntries },
          task,
          check.tool,
          check.args,
        );
        // Canonical JSON: jsonb does not keep key order, and the text must not depend on storage.
        content = typeof entry.response === 'string' ? entry.response : canonicalJson(entry.response);
      } catch (error) {
        // Not JSON, wrong shape, empty, over the bounds: rejected after its repair and redraws
        // (each recorded in llm_rejections). No mapping entry is written, so a later call asks again.
        if (!(error instanceof StructuredOutputRejectedError)) throw error;
        toolErrors += 1;
        content = toolUnavailableObservation(call.name);
        if (input.world.toolSimulatorFailure === 'reject') {
          rejected = rejection('the tool simulator', call.name, error);
        }
      }
    }
    toolMessages.push({ role: 'tool', tool_call_id: call.id, content });
  }
  return { toolMessages, toolCalls, userQuestions, toolErrors, userStopped, rejected };
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
