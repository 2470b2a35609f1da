/**
 * The embedded model server: an OpenAI-compatible HTTP API over the pinned SmolLM2 model, what
 * mockworld talks to when no model endpoint is configured.
 *
 * Routes: `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/chat/completions` (messages in all
 * roles, sampling, `n`, `stop`, `response_format` json_object / json_schema and function tools,
 * enforced by grammars), `POST /v1/embeddings`, `GET /health`.
 *
 * CLI: `npx tsx services/embedded-model/server.ts [--port N] [--host H] [--model FILE] [--threads N]
 * [--sequences N] [--contexts N] [--context-size N]`
 * logs `embedded model ready at http://127.0.0.1:PORT/v1` once it serves.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadEnvironment } from '../../schemas/environment.js';
import { EmbeddedModel, type EmbeddedModelOptions } from './engine.js';
import { ApiError, badRequest, ServerStartError } from './errors.js';
import { ChatCompletionRequestSchema, EmbeddingRequestSchema } from '../../schemas/openai-chat.js';
import { serveMetrics, timeRequests } from '../http/request-metrics.js';
import { parseBody } from './parse-body.js';

/** Options of {@link startEmbeddedModelServer}. */
export interface EmbeddedModelServerOptions extends EmbeddedModelOptions {
  /** TCP port; 0 picks a free one. Default: `MOCKWORLD_EMBEDDED_MODEL_PORT` (11435). */
  readonly port?: number;
  /** Interface to listen on. Default `127.0.0.1`. */
  readonly host?: string;
  /** Set (MOCKWORLD_METRICS_ADDRESS, host:port): serves its requests by route and outcome there. */
  readonly metricsAddress?: string;
}

/** The route label of a request: one of the server's routes, never a model name. */
export function embeddedRoute(_method: string, path: string): string {
  const route = path.replace(/\/+$/, '');
  if (route === '/v1/chat/completions') return 'chat';
  if (route === '/v1/embeddings') return 'embeddings';
  if (route === '/v1/models' || route.startsWith('/v1/models/')) return 'models';
  return route === '/health' ? 'health' : 'other';
}

/** A running embedded model server. */
export interface EmbeddedModelServer {
  /** OpenAI base URL, e.g. `http://127.0.0.1:11435/v1`. */
  readonly url: string;
  /** Model name to send and that responses report. */
  readonly model: string;
  /** Stops listening, aborts running generations and frees the model. */
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** Loads the model (fetching it once if needed) and serves it; resolves when it accepts requests. */
export async function startEmbeddedModelServer(
  options: EmbeddedModelServerOptions = {},
): Promise<EmbeddedModelServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? loadEnvironment().MOCKWORLD_EMBEDDED_MODEL_PORT;
  const model = await EmbeddedModel.load(options);
  const running = new Set<AbortController>();

  const server = http.createServer((req, res) => {
    const controller = new AbortController();
    running.add(controller);
    res.on('close', () => {
      running.delete(controller);
      if (!res.writableFinished) controller.abort(new Error('client disconnected'));
    });
    handle(model, req, controller.signal).then(
      (body) => send(res, 200, body),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        const apiError =
          error instanceof ApiError
            ? error
            : new ApiError(500, `The embedded model failed: ${(error as Error)?.message ?? String(error)}`);
        send(res, apiError.status, apiError.toJSON());
      },
    );
  });
  server.keepAliveTimeout = 5_000;
  timeRequests(server, 'embedded-model', embeddedRoute);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (error: NodeJS.ErrnoException) => {
    await model.dispose();
    const hint =
      error.code === 'EADDRINUSE' ? '; another server runs there: stop it or pass another port' : '';
    throw new ServerStartError(`Cannot listen on ${host}:${port}: ${error.message}${hint}`);
  });

  const closeMetrics = await serveMetrics(options.metricsAddress);
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${address.port}/v1`,
    model: model.name,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const controller of running) controller.abort(new Error('server closing'));
        server.closeAllConnections();
        await stopped;
        await closeMetrics();
        await model.dispose();
      })();
      return closing;
    },
  };
}

async function handle(
  model: EmbeddedModel,
  req: http.IncomingMessage,
  signal: AbortSignal,
): Promise<unknown> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const route = url.pathname.replace(/\/+$/, '');
  const method = req.method ?? 'GET';
  const only = (allowed: string) => {
    if (method !== allowed) throw new ApiError(405, `${method} is not allowed on ${route}; use ${allowed}`);
  };

  if (route === '/health') {
    only('GET');
    return { status: 'ok', model: model.name };
  }
  if (route === '/v1/models') {
    only('GET');
    return { object: 'list', data: [modelCard(model)] };
  }
  if (route.startsWith('/v1/models/')) {
    only('GET');
    const id = decodeURIComponent(route.slice('/v1/models/'.length));
    if (id !== model.name)
      throw new ApiError(
        404,
        `The model '${id}' does not exist; this server has '${model.name}'`,
        'not_found_error',
        'model',
        'model_not_found',
      );
    return modelCard(model);
  }
  if (route === '/v1/chat/completions') {
    only('POST');
    return model.complete(parseBody(ChatCompletionRequestSchema, await readJson(req)), signal);
  }
  if (route === '/v1/embeddings') {
    only('POST');
    return model.embed(parseBody(EmbeddingRequestSchema, await readJson(req)));
  }
  throw new ApiError(
    404,
    `No route ${method} ${url.pathname}; this server serves /v1/models, /v1/chat/completions and /v1/embeddings`,
    'not_found_error',
  );
}

function modelCard(model: EmbeddedModel) {
  return {
    id: model.name,
    object: 'model',
    created: 0,
    owned_by: 'mockworld',
    context_length: model.contextSize,
  };
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`The request body is not valid JSON: ${(error as Error).message}`);
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      model: { type: 'string' },
      threads: { type: 'string' },
      sequences: { type: 'string' },
      contexts: { type: 'string' },
      'context-size': { type: 'string' },
    },
  });
  const int = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new ServerStartError(`--${name} must be a non-negative integer, got '${value}'`);
    return n;
  };
  const server = await startEmbeddedModelServer({
    port: int('port', values.port),
    host: values.host,
    modelPath: values.model,
    threads: int('threads', values.threads),
    sequences: int('sequences', values.sequences),
    contexts: int('contexts', values.contexts),
    contextSize: int('context-size', values['context-size']),
    metricsAddress: loadEnvironment().MOCKWORLD_METRICS_ADDRESS,
  });
  console.log(`embedded model ready at ${server.url}`);
  const stop = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error: Error) => {
    console.error(error.message);
    process.exit(1);
  });
}
