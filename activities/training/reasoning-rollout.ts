/**
 * A GRPO rollout of a reasoning problem (seed 000 §3.4: reasoning tasks "run in a real Python
 * environment and are evaluated by answer correctness"): the policy works the kept problem's
 * persona scenario with the real `python` tool (the sandbox) and, for search problems, the `search`
 * tool, then its final answer gets the correctness reward (1/0). The episode lives in `episodes`
 * like a mock-world rollout (checkpointed per turn, resumed on retry, batched for the trainer); its
 * reward in `correctness_rewards` under the episode's id, so a retry scores nothing again.
 */
import type { ChatCompletionToolMessageParam } from 'openai/resources/chat/completions';
import type pg from 'pg';
import { EpisodeInputSchema, type EndReason, type EpisodeInput } from '../../schemas/episode-input.js';
import type { FunctionTool } from '../../schemas/function-tool.js';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import type { CorrectnessReward, ReasoningKind } from '../../schemas/reasoning-correctness.js';
import type { ReasoningMix } from '../../schemas/grpo-spec.js';
import { scoreAnswers } from '../correctness/rewards.js';
import type { ModelClient } from '../llm/index.js';
import { callPythonTool, PYTHON_TOOL, type RunDependencies } from '../sandbox/index.js';
import { callSearchTool, SEARCH_TOOL } from '../search/index.js';
import { solveMessages } from '../synthesis/reasoning.js';
import { playEpisode, TaskNotFoundError, TaskNotReadyError, type EpisodeHooks } from '../world/index.js';
import type { EpisodeState } from '../world/episode-store.js';
import type { AgentToolCall } from '../world/transcript.js';
import { rolloutEpisode, type RolloutInput } from './rollout.js';

/** A kept reasoning problem as a rollout needs it. */
export interface ReasoningProblem {
  readonly problemId: string;
  readonly kind: ReasoningKind;
  /** The persona scenario the teacher solved: what the policy is asked. */
  readonly scenario: string;
  /** The agreed (and, where the seed gave one, checked) final answer. */
  readonly answer: string;
}

/** The tools a problem of `kind` is rolled out with; the trainer's batch offers the same. */
export function reasoningTools(kind: ReasoningKind): FunctionTool[] {
  return kind === 'search' ? [SEARCH_TOOL, PYTHON_TOOL] : [PYTHON_TOOL];
}

/**
 * Loads a kept problem. Throws {@link TaskNotFoundError} for an unknown id and
 * {@link TaskNotReadyError} for one that was not kept (no agreed answer to score against).
 */
export async function loadKeptProblem(pool: pg.Pool, problemId: string): Promise<ReasoningProblem> {
  const { rows } = await pool.query<{
    kind: ReasoningKind;
    scenario: string | null;
    answer: string | null;
    outcome: string;
  }>('SELECT kind, scenario, answer, outcome FROM reasoning_problems WHERE problem_id = $1', [problemId]);
  const row = rows[0];
  if (!row) throw new TaskNotFoundError(problemId);
  if (row.outcome !== 'kept' || !row.scenario || !row.answer) {
    throw new TaskNotReadyError(
      problemId,
      `the reasoning problem is ${row.outcome}, not kept with an answer`,
    );
  }
  return { problemId, kind: row.kind, scenario: row.scenario, answer: row.answer };
}

/** Input of {@link runReasoningRollout}: a rollout's ids and settings, the judge and the tools. */
export interface ReasoningRolloutInput extends RolloutInput {
  /** Judges a search answer that is not an exact match (seed §4.1). */
  readonly judge: ModelRole;
  readonly reasoning: Pick<ReasoningMix, 'search' | 'sandbox'>;
}

/** The rollout's summary with its correctness reward. */
export interface ReasoningRolloutResult {
  readonly episodeId: string;
  readonly turns: number;
  readonly endReason: EndReason;
  readonly reward: 0 | 1;
  readonly extractedAnswer: string | null;
}

/** What a reasoning rollout needs from the worker. */
export interface ReasoningRolloutDependencies {
  readonly pool: pg.Pool;
  readonly models: ModelClient;
  /** The sandbox of the `python` tool and of the math verifier. */
  readonly sandbox: () => RunDependencies;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Runs (or resumes) the episode, then scores its last answer. A search problem without
 * `reasoning.search` is refused (TaskNotReadyError): planIteration refuses such a mix before any
 * rollout.
 */
export async function runReasoningRollout(
  deps: ReasoningRolloutDependencies,
  input: ReasoningRolloutInput,
  hooks: EpisodeHooks = {},
): Promise<ReasoningRolloutResult> {
  const problem = await loadKeptProblem(deps.pool, input.taskId);
  const episode = EpisodeInputSchema.parse(rolloutEpisode(input));
  const state = await playReasoningEpisode(deps, problem, episode, input.reasoning, hooks);
  const reward = await scoreReasoningEpisode(deps, problem, state, input.runId, input.judge, hooks.signal);
  return {
    episodeId: episode.episodeId,
    turns: state.turns,
    endReason: state.endReason!,
    reward: reward.reward,
    extractedAnswer: reward.extractedAnswer,
  };
}

/**
 * Plays (or resumes) one episode of the policy on a problem through the shared loop
 * (world/episode-loop.ts, which bounds it), with every tool call run for real, in order; an unknown
 * tool gets an error observation, never a failed activity. Returns the finished episode's state.
 */
export async function playReasoningEpisode(
  deps: ReasoningRolloutDependencies,
  problem: ReasoningProblem,
  episode: EpisodeInput,
  tooling: Pick<ReasoningMix, 'search' | 'sandbox'>,
  hooks: EpisodeHooks = {},
): Promise<EpisodeState> {
  const { pool } = deps;
  const { signal } = hooks;
  signal?.throwIfAborted();
  const searchBackend = tooling.search;
  if (problem.kind === 'search' && !searchBackend) {
    throw new TaskNotReadyError(problem.problemId, 'a search problem needs a search backend');
  }
  const tools = reasoningTools(problem.kind);

  /** One tool call's answer: the real program's output or the search results. */
  const answer = async (call: AgentToolCall): Promise<{ content: string; error: boolean }> => {
    if (!tools.some((tool) => tool.function.name === call.name)) {
      const offered = tools.map((tool) => tool.function.name).join(', ');
      return { content: `Error: there is no tool "${call.name}"; the tools are: ${offered}.`, error: true };
    }
    if (call.name === PYTHON_TOOL.function.name) {
      const outcome = await callPythonTool(deps.sandbox(), call.arguments, tooling.sandbox);
      return { content: outcome.content, error: outcome.run?.outcome !== 'ok' };
    }
    const outcome = await callSearchTool({ pool, env: deps.env, signal }, searchBackend!, call.arguments);
    return { content: outcome.content, error: outcome.hits === null };
  };

  const opening = await solveMessages(problem.kind, problem.scenario, episode.templates);
  return playEpisode(
    deps,
    episode,
    {
      opening,
      offer: () => ({ tools }),
      answer: async (_transcript, calls) => {
        const toolMessages: ChatCompletionToolMessageParam[] = [];
        let toolErrors = 0;
        for (const call of calls) {
          const { content, error } = await answer(call);
          if (error) toolErrors += 1;
          toolMessages.push({ role: 'tool', tool_call_id: call.id, content });
        }
        return { toolMessages, toolCalls: calls.length, userQuestions: 0, toolErrors, userStopped: false };
      },
    },
    hooks,
  );
}

/**
 * The correctness reward of a finished episode's last answer, stored under the episode's id (a
 * retry finds it). `judge` decides search answers that are no exact match.
 */
export async function scoreReasoningEpisode(
  deps: ReasoningRolloutDependencies,
  problem: ReasoningProblem & { readonly aliases?: readonly string[] },
  state: EpisodeState,
  runId: string,
  judge: ModelRole | undefined,
  signal?: AbortSignal,
): Promise<CorrectnessReward> {
  const [reward] = await scoreAnswers(
    { pool: deps.pool, models: deps.models, sandbox: deps.sandbox, signal },
    {
      runId,
      kind: problem.kind,
      question: problem.scenario,
      gold: problem.answer,
      aliases: [...(problem.aliases ?? [])],
      judge: problem.kind === 'search' ? judge : undefined,
      items: [{ rewardId: state.episodeId, response: finalResponse(state) }],
    },
  );
  return reward!;
}

/** The text of the last assistant turn: the answer the reward reads. */
function finalResponse(state: EpisodeState): string {
  const last = [...state.messages].reverse().find((message) => message.role === 'assistant');
  const content = last?.content;
  return typeof content === 'string' ? content : '';
}
