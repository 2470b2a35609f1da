import type {
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import type pg from 'pg';
import { BOUNDS } from '../../schemas/bounds.js';
import type { FunctionTool } from '../../schemas/function-tool.js';
import { EpisodeInputSchema, type EpisodeInput, type EpisodeInputData } from '../../schemas/episode-input.js';
import { canonicalJson, StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import { getPool } from '../store/db.js';
import { agentSystemPrompt } from './agent-prompt.js';
import { ASK_USER_TOOL, ASK_USER_TOOL_NAME } from './ask-user.js';
import { playEpisode, progressOf, type EpisodeHooks, type TurnAnswers } from './episode-loop.js';
import type { EpisodeSummary } from './episode-summary.js';
import { notRunObservation, toolUnavailableObservation, userUnavailableObservation } from './observations.js';
import { loadTask, type WorldTask } from './task-store.js';
import { resolveToolCall } from './tool-mapping.js';
import { validateToolCall } from './tool-validation.js';
import { userDialogue, type AgentToolCall } from './transcript.js';
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

/**
 * Runs (or resumes, or just reports) one episode in the mock world (seed §3.2): agent turns
 * against the simulated tools and user, through the shared loop (episode-loop.ts, which says how
 * it resumes and where it is bounded). A simulator that gives no usable answer becomes an error
 * observation or rejects the episode (`simulator_failed`, with `end_detail`), as `input.world`
 * says; it never fails the activity.
 */
export async function runEpisode(
  deps: EpisodeRunnerDependencies,
  data: EpisodeInputData,
  hooks: EpisodeHooks = {},
): Promise<EpisodeSummary> {
  const input = EpisodeInputSchema.parse(data);
  hooks.signal?.throwIfAborted();
  const task = await loadTask(deps.pool, input.taskId);
  const agentTools = [...task.tools, ASK_USER_TOOL];
  const state = await playEpisode(
    deps,
    input,
    {
      opening: openingMessages(input, task),
      offer: (turn) => turnOffer(input.turnToolChoice[turn - 1] ?? 'auto', task.tools),
      answer: (transcript, calls, signal) =>
        answerCalls(deps, input, task, agentTools, transcript, calls, signal),
    },
    hooks,
  );
  return { ...progressOf(state), endReason: state.endReason! };
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
  transcript: readonly ChatCompletionMessageParam[],
  calls: readonly AgentToolCall[],
  signal: AbortSignal | undefined,
): Promise<TurnAnswers> {
  const context = { runId: input.runId, signal, models: deps.models, templates: input.templates };
  const toolMessages: ChatCompletionToolMessageParam[] = [];
  let toolCalls = 0;
  let userQuestions = 0;
  let toolErrors = 0;
  let userStopped = false;
  let rejected: string | undefined;
  for (const call of calls) {
    if (userStopped || rejected !== undefined) {
      const why = rejected !== undefined ? 'the episode was rejected' : undefined;
      toolMessages.push({ role: 'tool', tool_call_id: call.id, content: notRunObservation(call.name, why) });
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
