import http from 'node:http';
import { z } from 'zod';
import { createModelClient } from '../../activities/llm/index.js';
import { EpisodeNotGradableError, UngradableRubricError } from '../../activities/reward/index.js';
import { getPool } from '../../activities/store/db.js';
import { TaskNotFoundError, TaskNotReadyError } from '../../activities/world/index.js';
import {
  AskUserRequestSchema,
  CloseSessionRequestSchema,
  JudgeRequestSchema,
  OpenSessionRequestSchema,
  ToolCallRequestSchema,
  type WorldServiceConfig,
} from '../../schemas/world-service.js';
import { authorizationCheck, HttpError, readBody, sendJson } from '../http/json-http.js';
import { listenMeasured } from '../http/request-metrics.js';
import { WorldServiceAccessError } from './errors.js';
import { attachOpenEnv } from './openenv.js';
import {
  askUser,
  callTool,
  closeSession,
  judgeSession,
  openSession,
  type WorldDependencies,
} from './world.js';

/**
 * The world service over HTTP (docs/verl.md): JSON in, JSON out.
 *
 *   POST /v1/sessions                        {request_id, task_id}       → {session_id, prompt, tools}
 *   POST /v1/sessions/{id}/tools/{name}      {request_id, arguments}     → {content[, problem]}
 *   POST /v1/sessions/{id}/ask_user          {request_id, question}      → {answer, stop}
 *   POST /v1/sessions/{id}/judge             {request_id, messages}      → {reward, ...}
 *   POST /v1/sessions/{id}/close             {request_id}                → {closed}
 *   GET  /health
 *   WS   /ws                                  OpenEnv's environment protocol (openenv.ts)
 *
 * Every POST is idempotent by `request_id`. A malformed request is a 4xx saying what is wrong; a
 * model that fails (the judge above all) is a 502, never a made-up answer or score.
 */

export interface WorldServerOptions {
  readonly databaseUrl: string;
  readonly config: WorldServiceConfig;
  /** 0 = any free port. */
  readonly port: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** The exact `Authorization` header required (MOCKWORLD_WORLD_AUTH); required beyond loopback. */
  readonly authorization?: string;
  readonly maxBodyBytes?: number;
  /** Set (MOCKWORLD_METRICS_ADDRESS, host:port): serves mockworld's Prometheus series there (requests by route and outcome, model calls). */
  readonly metricsAddress?: string;
}

export interface WorldServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const SESSION = /^\/v1\/sessions\/([A-Za-z0-9-]{1,80})\/(tools\/([A-Za-z0-9_-]{1,64})|ask_user|judge|close)$/;

function parse<T>(schema: z.ZodType<T>, body: Buffer): T {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new HttpError(400, `bad request: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The HTTP status of an error: what the caller got wrong (4xx), or what failed upstream (502). */
function statusOf(error: unknown): number {
  if (error instanceof HttpError) return error.status;
  if (error instanceof TaskNotFoundError) return 404;
  if (error instanceof TaskNotReadyError || error instanceof UngradableRubricError) return 422;
  if (error instanceof EpisodeNotGradableError) return 409;
  return 502;
}

/** Starts the world service; it runs until `close()`. */
export async function startWorldServer(options: WorldServerOptions): Promise<WorldServer> {
  const host = options.host ?? '127.0.0.1';
  if (!['127.0.0.1', 'localhost', '::1'].includes(host) && !options.authorization)
    throw new WorldServiceAccessError(host);
  const deps: WorldDependencies = {
    pool: getPool(options.databaseUrl),
    models: createModelClient({ databaseUrl: options.databaseUrl }),
    config: options.config,
  };
  const authorized = authorizationCheck(options.authorization);
  const maxBodyBytes = options.maxBodyBytes ?? 16 * 1024 * 1024;

  async function handle(req: http.IncomingMessage): Promise<unknown> {
    const route = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && route === '/health') return { ok: true };
    if (req.method !== 'POST')
      throw new HttpError(405, `${req.method} ${route}: only POST (and GET /health)`);
    if (!authorized(req.headers.authorization))
      throw new HttpError(401, 'missing or wrong Authorization header');
    if (req.headers.origin !== undefined) throw new HttpError(403, 'requests from browsers are refused');
    if (!/^application\/json\b/.test(req.headers['content-type'] ?? ''))
      throw new HttpError(415, 'the body must be application/json');
    const body = await readBody(req, maxBodyBytes);
    if (route === '/v1/sessions') return openSession(deps, parse(OpenSessionRequestSchema, body));
    const match = SESSION.exec(route);
    if (!match) throw new HttpError(404, `no route POST ${route}`);
    const [, sessionId, action, tool] = match as unknown as [string, string, string, string | undefined];
    if (tool !== undefined) return callTool(deps, sessionId, tool, parse(ToolCallRequestSchema, body));
    if (action === 'ask_user') return askUser(deps, sessionId, parse(AskUserRequestSchema, body));
    if (action === 'judge') return judgeSession(deps, sessionId, parse(JudgeRequestSchema, body));
    return closeSession(deps, sessionId, parse(CloseSessionRequestSchema, body));
  }

  const server = http.createServer((req, res) => {
    handle(req).then(
      (value) => sendJson(res, 200, value),
      (error: unknown) => {
        const status = statusOf(error);
        const message = error instanceof Error ? error.message : String(error);
        if (!res.headersSent)
          sendJson(
            res,
            status,
            { error: status === 502 ? `the world could not answer: ${message}` : message },
            status === 413,
          );
        else res.destroy();
      },
    );
  });
  const closeEpisodes = attachOpenEnv(server, deps, {
    authorized,
    maxPayloadBytes: maxBodyBytes,
    maxTurns: options.config.maxTurns,
  });
  const serving = await listenMeasured(
    server,
    { service: 'world', routeOf: routeLabel, metricsAddress: options.metricsAddress },
    options.port,
    host,
  );
  return {
    ...serving,
    async close() {
      closeEpisodes();
      await serving.close();
    },
  };
}

/** A request's route for the metrics: the path's shape, without session ids or tool names. */
function routeLabel(method: string, path: string): string {
  if (method === 'GET' && path === '/health') return path;
  if (method !== 'POST') return 'other';
  if (path === '/v1/sessions') return path;
  const match = SESSION.exec(path);
  if (!match) return 'other';
  return match[3] !== undefined ? '/v1/sessions/:id/tools/:name' : `/v1/sessions/:id/${match[2]}`;
}
