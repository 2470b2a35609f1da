import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import type { ChatMessage } from '../../schemas/openai-chat.js';
import { OpenEnvActionSchema, OpenEnvResetSchema, type OpenEnvAction } from '../../schemas/world-service.js';
import { ASK_USER_TOOL_NAME } from '../../activities/world/index.js';
import {
  askUser,
  callTool,
  closeSession,
  judgeSession,
  openSession,
  type WorldDependencies,
} from './world.js';

/**
 * The world service as an OpenEnv environment (OpenEnv's WebSocket protocol at `/ws`, which its
 * `EnvClient`/`GenericEnvClient` speak): one connection is one episode on one task.
 *
 *   → {"type": "reset", "data": {"task_id", "episode_id"?}}   ← observation: the prompt and the tools
 *   → {"type": "step", "data": {"content"?, "tool_calls"?}}   ← observation: the tool and user answers,
 *                                                               or, for a final answer, the judge's reward
 *   → {"type": "state"}                                       ← {"episode_id", "step_count", ...}
 *   → {"type": "close"}
 *
 * Every world call goes through the same sessions as the HTTP API (world.ts), keyed by the
 * episode id and the turn: a client that reconnects and replays an episode gets the first answers
 * again and pays for nothing twice, and the task's tool mapping is the same for every client.
 */

/** One episode's state on its connection. */
interface Episode {
  readonly episodeId: string;
  readonly sessionId: string;
  readonly taskId: string;
  messages: ChatMessage[];
  steps: number;
  done: boolean;
}

/** What OpenEnv's client reads from an observation reply. */
interface StepReply {
  readonly observation: Record<string, unknown>;
  readonly reward: number | null;
  readonly done: boolean;
}

class ProtocolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function parse<T>(schema: z.ZodType<T>, data: unknown): T {
  const parsed = schema.safeParse(data ?? {});
  if (!parsed.success) throw new ProtocolError('VALIDATION_ERROR', z.prettifyError(parsed.error));
  return parsed.data;
}

/** One connection: its episode, and its messages answered one at a time in order. */
class Connection {
  private episode: Episode | undefined;

  constructor(
    private readonly deps: WorldDependencies,
    private readonly maxTurns: number,
  ) {}

  async reset(data: unknown): Promise<StepReply> {
    const { task_id, episode_id } = parse(OpenEnvResetSchema, data);
    const episodeId = episode_id ?? randomUUID();
    const opened = await openSession(this.deps, { request_id: episodeId, task_id });
    this.episode = {
      episodeId,
      sessionId: opened.session_id,
      taskId: opened.task_id,
      messages: [...opened.prompt],
      steps: 0,
      done: false,
    };
    return {
      observation: {
        episode_id: episodeId,
        task_id: opened.task_id,
        messages: opened.prompt,
        tools: opened.tools,
      },
      reward: null,
      done: false,
    };
  }

  /**
   * One agent turn. The episode takes the turn only once it is answered: a step that failed (a
   * model behind the world did) can be sent again, and its world calls, keyed by the turn, are
   * answered from what was stored.
   */
  async step(data: unknown): Promise<StepReply> {
    const episode = this.episode;
    if (!episode) throw new ProtocolError('SESSION_ERROR', 'no episode: send a reset with a task_id first');
    if (episode.done) throw new ProtocolError('SESSION_ERROR', 'the episode is done: reset to play another');
    const action = parse(OpenEnvActionSchema, data);
    const turn = episode.steps + 1;
    const calls = (action.tool_calls ?? []).map((call, i) => ({
      id: call.id ?? `call_${turn}_${i}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    const said: ChatMessage = {
      role: 'assistant',
      content: action.content ?? '',
      ...(calls.length
        ? {
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: 'function' as const,
              function: { name: c.name, arguments: c.arguments },
            })),
          }
        : {}),
    };
    const answers: ChatMessage[] = [];
    let userStopped = false;
    for (const [i, call] of calls.entries()) {
      const requestId = `${episode.episodeId}/${turn}/${i}`;
      const { content, stop } = await this.answer(episode, call, requestId);
      answers.push({ role: 'tool', tool_call_id: call.id, content });
      userStopped ||= stop;
    }
    const transcript = [...episode.messages, said, ...answers];
    const reply =
      calls.length === 0 || userStopped || turn >= this.maxTurns
        ? await this.finish(episode, transcript, answers, turn)
        : { observation: { messages: answers, turn }, reward: null, done: false };
    episode.messages = transcript;
    episode.steps = turn;
    return reply;
  }

  /** A tool's answer, or the simulated user's for `ask_user` (`stop` when the user ends the talk). */
  private async answer(
    episode: Episode,
    call: { name: string; arguments: string },
    requestId: string,
  ): Promise<{ content: string; stop: boolean }> {
    if (call.name !== ASK_USER_TOOL_NAME) {
      const args = { request_id: requestId, arguments: call.arguments };
      return {
        content: (await callTool(this.deps, episode.sessionId, call.name, args)).content,
        stop: false,
      };
    }
    const question = questionOf(call.arguments);
    if (!question) return { content: 'ask_user needs {"question": "<what to ask the user>"}', stop: false };
    const reply = await askUser(this.deps, episode.sessionId, { request_id: requestId, question });
    return { content: reply.answer, stop: reply.stop };
  }

  /** Ends the episode: the judge scores the whole transcript against the task's rubric. */
  private async finish(
    episode: Episode,
    transcript: ChatMessage[],
    answers: ChatMessage[],
    turn: number,
  ): Promise<StepReply> {
    const judged = await judgeSession(this.deps, episode.sessionId, {
      request_id: `${episode.episodeId}/judge`,
      messages: transcript,
    });
    await closeSession(this.deps, episode.sessionId, { request_id: `${episode.episodeId}/close` });
    episode.done = true;
    return { observation: { messages: answers, turn, judgement: judged }, reward: judged.reward, done: true };
  }

  state(): Record<string, unknown> {
    const e = this.episode;
    return e
      ? {
          episode_id: e.episodeId,
          step_count: e.steps,
          task_id: e.taskId,
          session_id: e.sessionId,
          done: e.done,
        }
      : { episode_id: null, step_count: 0 };
  }
}

function questionOf(args: string): string | undefined {
  try {
    const parsed = JSON.parse(args) as { question?: unknown };
    return typeof parsed.question === 'string' && parsed.question.trim() ? parsed.question : undefined;
  } catch {
    return undefined;
  }
}

/** Answers one client message; a `close` ends the connection. */
async function reply(connection: Connection, socket: WebSocket, raw: string): Promise<void> {
  let message: { type?: unknown; data?: unknown };
  try {
    message = JSON.parse(raw) as typeof message;
  } catch {
    return send(socket, {
      type: 'error',
      data: { code: 'INVALID_JSON', message: 'the message is not JSON' },
    });
  }
  try {
    if (message.type === 'reset')
      return send(socket, { type: 'observation', data: await connection.reset(message.data) });
    if (message.type === 'step')
      return send(socket, { type: 'observation', data: await connection.step(message.data) });
    if (message.type === 'state') return send(socket, { type: 'state', data: connection.state() });
    if (message.type === 'close') return socket.close(1000);
    throw new ProtocolError(
      'UNKNOWN_TYPE',
      `unknown message type ${JSON.stringify(message.type)}: reset, step, state or close`,
    );
  } catch (error) {
    const code = error instanceof ProtocolError ? error.code : 'EXECUTION_ERROR';
    const text = error instanceof Error ? error.message : String(error);
    send(socket, {
      type: 'error',
      data: { code, message: code === 'EXECUTION_ERROR' ? `the world could not answer: ${text}` : text },
    });
  }
}

function send(socket: WebSocket, message: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
}

/**
 * Serves OpenEnv's `/ws` on the world's HTTP server, behind the same checks as its HTTP API
 * (the `Authorization` header when one is required; no browser origins). Returns what ends every
 * open episode's connection (at the server's close).
 */
export function attachOpenEnv(
  server: http.Server,
  deps: WorldDependencies,
  options: { authorized: (header: string | undefined) => boolean; maxPayloadBytes: number; maxTurns: number },
): () => void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const refuse = (status: string) => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
    };
    // A client that goes away mid-handshake must not take the service down with an unhandled error.
    socket.on('error', () => socket.destroy());
    if ((req.url ?? '/').split('?')[0] !== '/ws') return refuse('404 Not Found');
    if (!options.authorized(req.headers.authorization)) return refuse('401 Unauthorized');
    if (req.headers.origin !== undefined) return refuse('403 Forbidden');
    wss.handleUpgrade(req, socket, head, (ws) => {
      const connection = new Connection(deps, options.maxTurns);
      // A message over maxPayload or a broken frame ends this connection (ws closes it with 1009 or
      // 1002); it must not become an unhandled error of the service.
      ws.on('error', () => ws.terminate());
      let queue = Promise.resolve();
      ws.on('message', (raw) => {
        queue = queue.then(() => reply(connection, ws, raw.toString()));
      });
    });
  });
  return () => {
    for (const client of wss.clients) client.terminate();
    wss.close();
  };
}
