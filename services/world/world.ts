import type pg from 'pg';
import { canonicalJson } from '../../activities/llm/cache-key.js';
import { StructuredOutputRejectedError, type ModelClient } from '../../activities/llm/index.js';
import { judgeEpisode } from '../../activities/reward/index.js';
import {
  agentSystemPrompt,
  answerUser,
  ASK_USER_TOOL,
  ASK_USER_TOOL_NAME,
  resolveToolCall,
  validateToolCall,
} from '../../activities/world/index.js';
import {
  toolUnavailableObservation,
  userUnavailableObservation,
} from '../../activities/world/observations.js';
import { loadTask } from '../../activities/world/task-store.js';
import type { ChatMessage } from '../../schemas/openai-chat.js';
import type { WorldServiceConfig } from '../../schemas/world-service.js';
import { HttpError } from '../http/json-http.js';
import { answerOnce, createSession, dialogueOf, findSession, sessionIdOf, setStatus } from './store.js';

/** What the world needs: PostgreSQL (tasks, mapping, cache, ledger), the model client, its config. */
export interface WorldDependencies {
  readonly pool: pg.Pool;
  readonly models: ModelClient;
  readonly config: WorldServiceConfig;
}

/** What a trajectory starts from: its prompt and the task's tools (with `ask_user`). */
export interface OpenedSession {
  readonly session_id: string;
  readonly task_id: string;
  readonly prompt: { role: 'system' | 'user'; content: string }[];
  readonly tools: unknown[];
}

/** A tool's answer as the agent sees it; `problem` when the call itself was wrong or unanswerable. */
export interface ToolAnswer {
  readonly content: string;
  readonly problem?: string;
}

/** The judge's verdict as a reward (seed eq. 5). */
export interface Reward {
  readonly reward: number;
  readonly sub_goal_fraction: number | null;
  readonly interaction_fraction: number | null;
  readonly forbidden_violated: boolean;
}

const templatesOf = (config: WorldServiceConfig) => config.templates;

/** Opens (or, for a retried request id, finds) the session of one trajectory on `taskId`. */
export async function openSession(
  deps: WorldDependencies,
  request: { request_id: string; task_id: string },
): Promise<OpenedSession> {
  const sessionId = sessionIdOf(request.request_id);
  return answerOnce(
    deps.pool,
    { requestId: request.request_id, sessionId, kind: 'open', body: { task_id: request.task_id } },
    async () => {
      const task = await loadTask(deps.pool, request.task_id);
      await createSession(deps.pool, sessionId, task.taskId);
      return {
        session_id: sessionId,
        task_id: task.taskId,
        prompt: [
          { role: 'system' as const, content: agentSystemPrompt(templatesOf(deps.config)) },
          { role: 'user' as const, content: task.instruction },
        ],
        tools: [...task.tools, ASK_USER_TOOL],
      };
    },
  );
}

async function openTask(deps: WorldDependencies, sessionId: string) {
  const session = await findSession(deps.pool, sessionId);
  if (session.status === 'closed') throw new HttpError(409, `session ${sessionId} is closed`);
  return { session, task: await loadTask(deps.pool, session.taskId) };
}

/**
 * Answers a call of one of the task's tools: an exact (tool, arguments) entry of the task's
 * mapping answers without a model call; else the tool simulator answers and the entry is stored
 * once, so every trajectory, on every replica, gets the same answer to the same call. A call the
 * agent got wrong (unknown tool, arguments that break the schema) is answered, as in mockworld's
 * own rollouts, with what was wrong: the agent sees it and can do better.
 */
export async function callTool(
  deps: WorldDependencies,
  sessionId: string,
  name: string,
  request: { request_id: string; arguments: string | Record<string, unknown> },
): Promise<ToolAnswer> {
  await findSession(deps.pool, sessionId);
  if (name === ASK_USER_TOOL_NAME)
    throw new HttpError(400, 'ask_user is answered at POST /v1/sessions/{id}/ask_user, not as a task tool');
  const args = typeof request.arguments === 'string' ? request.arguments : JSON.stringify(request.arguments);
  return answerOnce(
    deps.pool,
    { requestId: request.request_id, sessionId, kind: 'tool', body: { name, arguments: args } },
    async (): Promise<ToolAnswer> => {
      // Only a new request needs an open session: a retried one gets its answer even after the close.
      const { task } = await openTask(deps, sessionId);
      const check = validateToolCall(task.tools, { name, arguments: args });
      if (!check.ok) return { content: check.observation, problem: check.problem };
      try {
        const { entry } = await resolveToolCall(
          {
            pool: deps.pool,
            models: deps.models,
            role: deps.config.models.toolSimulator,
            templates: templatesOf(deps.config),
            runId: deps.config.ledgerRunId,
          },
          task,
          check.tool,
          check.args,
        );
        return {
          content: typeof entry.response === 'string' ? entry.response : canonicalJson(entry.response),
        };
      } catch (error) {
        // The simulator's answer stayed unusable after its repair and redraws: the agent is told
        // the tool is unavailable (nothing stored, so a later call asks again).
        if (!(error instanceof StructuredOutputRejectedError)) throw error;
        return { content: toolUnavailableObservation(name), problem: 'simulator_failed' };
      }
    },
  );
}

/**
 * The simulated user's answer to the agent's question, from the task's instruction and hidden
 * context and this session's earlier questions only (never the tools or the rubric).
 */
export async function askUser(
  deps: WorldDependencies,
  sessionId: string,
  request: { request_id: string; question: string },
): Promise<{ answer: string; stop: boolean; question: string }> {
  await findSession(deps.pool, sessionId);
  return answerOnce(
    deps.pool,
    { requestId: request.request_id, sessionId, kind: 'ask_user', body: { question: request.question } },
    async () => {
      const { task } = await openTask(deps, sessionId); // as in callTool: only a new question needs it open
      try {
        const reply = await answerUser(
          {
            models: deps.models,
            role: deps.config.models.userSimulator,
            templates: templatesOf(deps.config),
            runId: deps.config.ledgerRunId,
          },
          {
            instruction: task.instruction,
            hiddenContext: task.hiddenContext,
            dialogue: await dialogueOf(deps.pool, sessionId),
            question: request.question,
          },
        );
        const answer = reply.answer || (reply.stop ? '(the user ended the conversation)' : '(no answer)');
        return { question: request.question, answer, stop: reply.stop };
      } catch (error) {
        if (!(error instanceof StructuredOutputRejectedError)) throw error;
        return { question: request.question, answer: userUnavailableObservation(), stop: false };
      }
    },
  );
}

/**
 * Judges the finished trajectory against the task's rubric: R = I(no forbidden) · mean(sub-goal
 * fraction, interaction fraction). The transcript is stored as the session's episode (purpose
 * `external`) and judged once; a judge that fails is an error (502), never a score.
 */
export async function judgeSession(
  deps: WorldDependencies,
  sessionId: string,
  request: { request_id: string; messages: ChatMessage[] },
): Promise<Reward> {
  const session = await findSession(deps.pool, sessionId);
  return answerOnce(
    deps.pool,
    { requestId: request.request_id, sessionId, kind: 'judge', body: { messages: request.messages } },
    async () => {
      await storeTranscript(deps.pool, session.sessionId, session.taskId, request.messages);
      const judged = await judgeEpisode(
        { pool: deps.pool, models: deps.models },
        {
          episodeId: session.sessionId,
          taskId: session.taskId,
          judge: deps.config.models.judge,
          runId: deps.config.ledgerRunId,
          templates: deps.config.templates,
        },
      );
      await setStatus(deps.pool, sessionId, 'judged');
      return {
        reward: judged.reward,
        sub_goal_fraction: judged.subGoalFraction,
        interaction_fraction: judged.interactionFraction,
        forbidden_violated: judged.forbiddenViolated,
      };
    },
  );
}

/** The session's transcript as its episode, once; another transcript for the same session is refused. */
async function storeTranscript(pool: pg.Pool, sessionId: string, taskId: string, messages: ChatMessage[]) {
  await pool.query(
    `INSERT INTO episodes (episode_id, task_id, purpose, sample_index, policy_version, messages, turns, end_reason)
     VALUES ($1, $2, 'external', 0, 'external', $3::jsonb, $4, 'final_answer')
     ON CONFLICT (episode_id) DO NOTHING`,
    [sessionId, taskId, JSON.stringify(messages), messages.filter((m) => m.role === 'assistant').length],
  );
  const { rows } = await pool.query<{ messages: unknown }>(
    'SELECT messages FROM episodes WHERE episode_id = $1',
    [sessionId],
  );
  if (canonicalJson(rows[0]?.messages) !== canonicalJson(messages))
    throw new HttpError(409, `session ${sessionId} was already judged on another transcript`);
}

/** Closes a session: no more tool calls or questions (its answers stay). */
export async function closeSession(
  deps: WorldDependencies,
  sessionId: string,
  request: { request_id: string },
): Promise<{ session_id: string; closed: true }> {
  await findSession(deps.pool, sessionId);
  return answerOnce(
    deps.pool,
    { requestId: request.request_id, sessionId, kind: 'close', body: {} },
    async () => {
      await setStatus(deps.pool, sessionId, 'closed');
      return { session_id: sessionId, closed: true as const };
    },
  );
}
