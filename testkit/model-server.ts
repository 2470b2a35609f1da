import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mulberry32 } from '../activities/training/sampling.js';
import { createBatchDouble, type BatchDouble } from './batch-double.js';
import { createEngineDouble, type EngineDouble, type EngineKind } from './serving-engine.js';

/**
 * A local OpenAI-compatible model server for tests and benchmarks: the only test double of the
 * project, at the model boundary. It plays scripted answers, counts requests per role, and
 * injects the faults real endpoints produce (429, 5xx, hangs, cut bodies, bad JSON, huge answers).
 *
 * Why this file is long (over 400 lines): the request handler, the fault kinds it plays and the stats it keeps
 * share one request loop; the serving-engine admin double is already its own module
 * (serving-engine.ts). A split would pass that loop's state between files for no reader's gain.
 *
 * Role convention: a request's role is its `X-Mockworld-Role` header (the model client sends the
 * call's role there), else `metadata.role` when the body has one, else the value of a line
 * `role: <name>` in the first system message (e.g. "You are the teacher.\nrole: teacher").
 * Requests without any of these have no role (`undefined`).
 *
 * Endpoints: POST /v1/chat/completions, POST /v1/embeddings, GET /v1/models, the Batch API's
 * /v1/files and /v1/batches (batch-double.ts: each line answered by the same script, its role the
 * job's `metadata.mockworld_role`); with `engine`, also the admin API of vLLM or SGLang that weight
 * sync uses (serving-engine.ts).
 */

/** The parts of a chat request a script looks at. */
export interface ChatRequestBody {
  readonly model: string;
  readonly messages: ReadonlyArray<{ role: string; content?: unknown; [key: string]: unknown }>;
  readonly tools?: readonly unknown[];
  readonly response_format?: { type: string; json_schema?: { name: string; schema: unknown } };
  readonly max_tokens?: number;
  readonly seed?: number;
  readonly metadata?: Record<string, unknown>;
  readonly [key: string]: unknown;
}

/** A chat request as a script sees it. */
export interface ScriptedRequest {
  /** Role found by the convention above. */
  readonly role: string | undefined;
  readonly body: ChatRequestBody;
  /** 0-based index of this request among all chat requests. */
  readonly index: number;
  /** 0-based index of this request among the requests of its role. */
  readonly roleIndex: number;
  /** The request's HTTP headers (lower-case names), e.g. a trial's `x-mockworld-eval-task`. */
  readonly headers: http.IncomingHttpHeaders;
}

/** A tool call to answer with; `arguments` objects are sent as JSON text. */
export interface ScriptedToolCall {
  readonly name: string;
  readonly arguments: unknown;
  readonly id?: string;
}

/**
 * An answer: plain text, or content / tool calls with an optional finish reason and response
 * headers (e.g. the policy server's `x-policy-version`).
 */
export type Reply =
  | string
  | { readonly content: string; readonly finishReason?: string; readonly headers?: ReplyHeaders }
  | {
      readonly toolCalls: readonly ScriptedToolCall[];
      readonly content?: string;
      readonly headers?: ReplyHeaders;
    };

/** HTTP headers sent with a scripted answer. */
export type ReplyHeaders = Readonly<Record<string, string>>;

/** A rule: answers requests of `role` (any role when unset) for which `when` holds. */
export interface Rule {
  readonly role?: string;
  readonly when?: (request: ScriptedRequest) => boolean;
  readonly reply: Reply | ((request: ScriptedRequest) => Reply | Promise<Reply>);
  /** Extra latency of this rule, added to the server's. */
  readonly latencyMs?: number;
}

/** A function answering every request, or rules tried in order (first match answers). */
export type Script = ((request: ScriptedRequest) => Reply | Promise<Reply>) | readonly Rule[];

/** A fault to play instead of (or into) the next answer. */
export type Fault = (
  | {
      /** 429 with `Retry-After: <seconds>` (default 1), or `retry-after-ms`, or an HTTP date. */
      readonly kind: 'rate-limit';
      readonly retryAfterSeconds?: number;
      readonly retryAfterMs?: number;
      readonly retryAfterAsDate?: boolean;
    }
  | { readonly kind: 'server-error'; readonly status?: number }
  | { readonly kind: 'bad-request' }
  /** Accepts the request and never answers, until the client gives up or the server closes. */
  | { readonly kind: 'hang' }
  /** Sends half of the JSON body announced by Content-Length, then resets the connection. */
  | { readonly kind: 'truncated-body' }
  /** A complete 200 response whose body is not valid JSON. */
  | { readonly kind: 'malformed-body' }
  /** A valid response whose content is the scripted answer cut in half (finish_reason "length"). */
  | { readonly kind: 'truncated-json' }
  /** A valid response whose content is JSON of the wrong shape. */
  | { readonly kind: 'schema-invalid'; readonly content?: string }
  /** A valid response whose content is `bytes` long (default 2 MB). */
  | { readonly kind: 'huge-content'; readonly bytes?: number }
) & {
  /** Only requests of this role consume the fault; any request when unset. */
  readonly role?: string;
};

/** The kinds of {@link Fault}. */
export type FaultKind = Fault['kind'];

/** Faults drawn at random, reproducibly. */
export interface RandomFaults {
  /** Chance that a request gets a fault. */
  readonly probability: number;
  /** Kinds to draw from, uniformly. */
  readonly kinds: readonly FaultKind[];
  /** Seed of the generator; the same seed and request order give the same faults. */
  readonly seed: number;
}

/** One chat request as logged by the server. */
export interface LoggedRequest {
  /** Arrival time (ms since epoch). */
  readonly at: number;
  readonly role: string | undefined;
  readonly fault: FaultKind | undefined;
  /** The Authorization header as received. */
  readonly authorization: string | undefined;
  readonly body: ChatRequestBody;
}

/**
 * One chat answer handed to a client in full (kept when `logDeliveries` is on): enough to tell an
 * answer paid twice (the same request body answered again) and which connection took it.
 */
export interface Delivery {
  /** When the last byte was handed to the client (ms since epoch). */
  readonly at: number;
  /** When the request arrived (ms since epoch). */
  readonly receivedAt: number;
  readonly role: string | undefined;
  /** The client's TCP port: names the connection, and so the process, that received the answer. */
  readonly remotePort: number | undefined;
  /**
   * sha256 (hex) of the request body with object keys sorted: the same request sent again hashes the
   * same even when the client rebuilt it with its keys in another order (e.g. messages read back
   * from jsonb, which does not keep key order).
   */
  readonly bodyHash: string;
  /** The content fault played into this answer (truncated-json, ...); undefined for a normal answer. */
  readonly fault: FaultKind | undefined;
}

/** One chat request as it arrived (kept when `logDeliveries` is on), faulted or not: who asked what, when. */
export interface Arrival {
  readonly at: number;
  readonly role: string | undefined;
  readonly remotePort: number | undefined;
  /** As {@link Delivery.bodyHash}. */
  readonly bodyHash: string;
  readonly fault: FaultKind | undefined;
}

/** Options of {@link startModelServer}. */
export interface ModelServerOptions {
  /** Answers; unset = an echo of the last user message. */
  readonly script?: Script;
  /** Delay before every answer, in ms. Default 0. */
  readonly latencyMs?: number;
  /** Model ids listed by GET /v1/models. Default ['mock-model']. */
  readonly models?: readonly string[];
  /** Keep a log of request bodies (turn off in benchmarks). Default true. */
  readonly log?: boolean;
  /** Dimension of embedding vectors when the request names none. Default 64. */
  readonly embeddingDimensions?: number;
  /** Keep a {@link Delivery} per answer delivered (`deliveries`) and an {@link Arrival} per request (`arrivals`). Default false. */
  readonly logDeliveries?: boolean;
  /**
   * Play a serving engine's admin API (serving-engine.ts): `models[0]` is its base model, loaded
   * adapters are listed and served by name, a chat for a model it does not serve is a 404.
   */
  readonly engine?: EngineKind;
}

/** Counters since start or the last `resetStats()`. */
export interface ModelServerStats {
  /** Chat requests received, faulted ones included. */
  total: number;
  /** Chat requests per role ('(none)' for requests without one). */
  byRole: Record<string, number>;
  /** Faults played, per kind. */
  faults: Partial<Record<FaultKind, number>>;
  /** Chat requests being served now. */
  inFlight: number;
  /** Highest `inFlight` seen. */
  maxInFlight: number;
  /** Embedding requests received. */
  embeddings: number;
  /** Normal (unfaulted) answers delivered in full: what a real endpoint would bill. */
  answered: number;
  /** Requests whose client disconnected before the answer was sent. */
  abandoned: number;
  /** `answered`, per role ('(none)' for requests without one). */
  answeredByRole: Record<string, number>;
  /**
   * 200 completions delivered in full per role, normal answers and content faults (truncated-json,
   * schema-invalid, huge-content) alike: every answer a client can store, and a real endpoint bills.
   */
  billedByRole: Record<string, number>;
  /** TCP connections accepted (a client that keeps its connections alive opens few). */
  connections: number;
}

/** A running test model server. */
export interface ModelServer {
  /** Base URL for clients, ending in `/v1`. */
  readonly url: string;
  readonly stats: ModelServerStats;
  /** Chat requests in arrival order (empty when logging is off). */
  readonly requests: readonly LoggedRequest[];
  /** Answers delivered in full, in order (empty unless `logDeliveries`). */
  readonly deliveries: readonly Delivery[];
  /** Chat requests in arrival order, faulted ones included (empty unless `logDeliveries`). */
  readonly arrivals: readonly Arrival[];
  /** Chat requests received (of `role`, when given), faulted ones included. */
  requestCount(role?: string): number;
  setScript(script: Script | undefined): void;
  setLatency(ms: number): void;
  /** Queues faults; each is consumed by the next request it matches (by role, if it names one). */
  injectFaults(...faults: Fault[]): void;
  /** Draws faults at random for every request from now on; `undefined` stops. */
  setRandomFaults(random: RandomFaults | undefined): void;
  /** Faults still queued. */
  pendingFaults(): number;
  resetStats(): void;
  /** Stops listening and destroys every connection, hung ones included. */
  close(): Promise<void>;
  /** The serving engine's admin API and state, when started with `engine`. */
  readonly engine: EngineDouble | undefined;
  /** The Batch API: its billing counts and faults. */
  readonly batches: BatchDouble;
}

/** Starts a server on 127.0.0.1 at a free port. */
export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  let script = options.script;
  let latencyMs = options.latencyMs ?? 0;
  const keepLog = options.log ?? true;
  const models = options.models ?? ['mock-model'];
  const defaultDimensions = options.embeddingDimensions ?? 64;
  const queued: Fault[] = [];
  let random: { settings: RandomFaults; next: () => number } | undefined;
  const requests: LoggedRequest[] = [];
  const deliveries: Delivery[] = [];
  const arrivals: Arrival[] = [];
  const logDeliveries = options.logDeliveries ?? false;
  const stats: ModelServerStats = freshStats();
  let sequence = 0;
  const engine = options.engine ? createEngineDouble(options.engine, models[0] ?? 'mock-model') : undefined;
  // A batch line is a chat request without HTTP around it: the same script answers it.
  const batches = createBatchDouble(async (body, jobRole) => {
    const chatBody = body as ChatRequestBody;
    const role = jobRole ?? roleOf(chatBody);
    const roleKey = role ?? '(none)';
    const roleIndex = stats.byRole[roleKey] ?? 0;
    stats.byRole[roleKey] = roleIndex + 1;
    const index = stats.total++;
    const request: ScriptedRequest = { role, body: chatBody, index, roleIndex, headers: {} };
    return completion(chatBody, index, await replyFor(matchRule(request), request));
  });

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error), type: 'server_error' } });
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: (engine ? engine.servedModels() : models).map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'mockworld-test',
        })),
      });
      return;
    }
    // The body is read once: the admin API and the chat route below share it.
    const text = req.method === 'POST' ? await readBody(req) : '';
    const batchReply = await batches.handle(
      req.method ?? 'GET',
      path,
      new URL(req.url ?? '/', 'http://double').searchParams,
      text,
      req.headers['content-type'] ?? '',
    );
    if (batchReply?.raw !== undefined) {
      res.writeHead(batchReply.status, { 'content-type': 'application/octet-stream' });
      res.end(batchReply.raw);
      return;
    }
    if (batchReply) return sendJson(res, batchReply.status, batchReply.body);
    if (engine) {
      const admin = engine.handle(req.method ?? 'GET', req.url ?? '/', parseJson(text));
      if (admin) return sendJson(res, admin.status, admin.body);
    }
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/v1/embeddings')) {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'not_found' } });
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      sendJson(res, 400, { error: { message: 'request body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    if (path === '/v1/embeddings') return embeddings(body as EmbeddingBody, res);
    const servable = engine?.canServe(String((body as ChatRequestBody).model));
    if (servable && !servable.ok) {
      sendJson(res, servable.status, { error: { message: servable.message, type: 'NotFoundError' } });
      return;
    }
    return chat(body as ChatRequestBody, req, res);
  }

  async function chat(
    body: ChatRequestBody,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const role = roleOf(body, req.headers['x-mockworld-role']);
    const roleKey = role ?? '(none)';
    const roleIndex = stats.byRole[roleKey] ?? 0;
    stats.byRole[roleKey] = roleIndex + 1;
    const index = stats.total++;
    stats.inFlight += 1;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    res.on('close', () => (stats.inFlight -= 1));

    const fault = takeFault(role);
    if (fault) stats.faults[fault.kind] = (stats.faults[fault.kind] ?? 0) + 1;
    if (keepLog) {
      requests.push({
        at: Date.now(),
        role,
        fault: fault?.kind,
        authorization: req.headers.authorization,
        body,
      });
    }
    const request: ScriptedRequest = { role, body, index, roleIndex, headers: req.headers };
    const receivedAt = Date.now();
    const bodyHash = logDeliveries ? canonicalHash(body) : '';
    if (logDeliveries) {
      arrivals.push({
        at: receivedAt,
        role,
        remotePort: req.socket.remotePort,
        bodyHash,
        fault: fault?.kind,
      });
    }
    /** Counts a completion the client can store once its last byte is handed over. */
    const bill = (normal: boolean) =>
      res.once('finish', () => {
        if (normal) {
          stats.answered += 1;
          stats.answeredByRole[roleKey] = (stats.answeredByRole[roleKey] ?? 0) + 1;
        }
        stats.billedByRole[roleKey] = (stats.billedByRole[roleKey] ?? 0) + 1;
        if (logDeliveries) {
          deliveries.push({
            at: Date.now(),
            receivedAt,
            role,
            remotePort: req.socket.remotePort,
            bodyHash,
            fault: normal ? undefined : fault?.kind,
          });
        }
      });
    const rule = matchRule(request);
    const delay = latencyMs + (rule?.latencyMs ?? 0);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (res.destroyed) {
      stats.abandoned += 1; // the client gave up (or died) while we waited
      return;
    }

    switch (fault?.kind) {
      case 'rate-limit': {
        const headers: Record<string, string> = {};
        if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
        else if (fault.retryAfterAsDate) {
          headers['retry-after'] = new Date(Date.now() + (fault.retryAfterSeconds ?? 1) * 1000).toUTCString();
        } else headers['retry-after'] = String(fault.retryAfterSeconds ?? 1);
        sendJson(
          res,
          429,
          { error: { message: 'rate limit reached', type: 'rate_limit_exceeded' } },
          headers,
        );
        return;
      }
      case 'server-error':
        sendJson(res, fault.status ?? 500, {
          error: { message: 'injected server error', type: 'server_error' },
        });
        return;
      case 'bad-request':
        sendJson(res, 400, { error: { message: 'injected bad request', type: 'invalid_request_error' } });
        return;
      case 'hang':
        return; // never answers; close() destroys the socket
      case 'truncated-body': {
        const text = JSON.stringify(completion(body, index, await replyFor(rule, request)));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.write(text.slice(0, Math.floor(text.length / 2)), () => res.destroy());
        return;
      }
      case 'malformed-body': {
        const text = JSON.stringify(completion(body, index, await replyFor(rule, request)));
        const cut = text.slice(0, Math.floor(text.length / 2));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(cut) });
        res.end(cut);
        return;
      }
      case 'truncated-json': {
        const reply = normalizeReply(await replyFor(rule, request));
        const content = reply.content ?? '';
        bill(false);
        sendJson(
          res,
          200,
          completion(body, index, {
            content: content.slice(0, Math.floor(content.length / 2)),
            finishReason: 'length',
          }),
        );
        return;
      }
      case 'schema-invalid':
        bill(false);
        sendJson(res, 200, completion(body, index, { content: fault.content ?? '{"unexpected": true}' }));
        return;
      case 'huge-content': {
        const bytes = fault.bytes ?? 2 * 1024 * 1024;
        bill(false);
        sendJson(
          res,
          200,
          completion(body, index, { content: `{"padding": "${'x'.repeat(Math.max(0, bytes - 16))}"}` }),
        );
        return;
      }
      case undefined: {
        // Counted once the whole answer has been handed to the client: the calls a real
        // endpoint would bill. A client that went away before this is not billed here.
        bill(true);
        const reply = await replyFor(rule, request);
        sendJson(res, 200, completion(body, index, reply), { ...normalizeReply(reply).headers });
        return;
      }
      default: {
        const unknown: never = fault;
        throw new Error(`unknown fault ${JSON.stringify(unknown)}`);
      }
    }
  }

  function takeFault(role: string | undefined): Fault | undefined {
    const at = queued.findIndex((f) => f.role === undefined || f.role === role);
    if (at >= 0) return queued.splice(at, 1)[0];
    if (random && random.next() < random.settings.probability) {
      const kinds = random.settings.kinds;
      const kind = kinds[Math.floor(random.next() * kinds.length)];
      if (kind) return { kind } as Fault;
    }
    return undefined;
  }

  function matchRule(request: ScriptedRequest): Rule | undefined {
    if (!script) return undefined;
    if (typeof script === 'function') return { reply: script };
    return script.find(
      (r) => (r.role === undefined || r.role === request.role) && (!r.when || r.when(request)),
    );
  }

  function embeddings(body: EmbeddingBody, res: http.ServerResponse): void {
    stats.embeddings += 1;
    const inputs = Array.isArray(body.input) ? body.input.map(String) : [String(body.input ?? '')];
    const dimensions = body.dimensions ?? defaultDimensions;
    sendJson(res, 200, {
      object: 'list',
      model: body.model,
      data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: embed(text, dimensions) })),
      usage: {
        prompt_tokens: inputs.reduce((n, t) => n + tokens(t), 0),
        total_tokens: inputs.reduce((n, t) => n + tokens(t), 0),
      },
    });
  }

  server.on('connection', () => (stats.connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    stats,
    requests,
    deliveries,
    arrivals,
    requestCount: (role) => (role === undefined ? stats.total : (stats.byRole[role] ?? 0)),
    setScript: (next) => (script = next),
    setLatency: (ms) => (latencyMs = ms),
    injectFaults: (...faults) => queued.push(...faults),
    setRandomFaults: (settings) => {
      random = settings && { settings, next: mulberry32(settings.seed) };
    },
    pendingFaults: () => queued.length,
    engine,
    batches,
    resetStats: () => {
      const inFlight = stats.inFlight;
      Object.assign(stats, freshStats(), { inFlight, maxInFlight: inFlight });
      requests.length = 0;
      deliveries.length = 0;
      arrivals.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  /** A chat.completion object for a reply, with usage counted at ~4 characters per token. */
  function completion(body: ChatRequestBody, index: number, reply: Reply) {
    const r = normalizeReply(reply);
    const toolCalls = r.toolCalls?.map((call, i) => ({
      id: call.id ?? `call_${index}_${i}`,
      type: 'function' as const,
      function: {
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      },
    }));
    const content = r.content ?? null;
    const completionText = (content ?? '') + (toolCalls ? JSON.stringify(toolCalls) : '');
    const promptTokens =
      tokens(JSON.stringify(body.messages)) + (body.tools ? tokens(JSON.stringify(body.tools)) : 0);
    const completionTokens = tokens(completionText);
    return {
      id: `chatcmpl-${++sequence}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content,
            refusal: null,
            ...(toolCalls ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: r.finishReason ?? (toolCalls ? 'tool_calls' : 'stop'),
        },
      ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    };
  }

  async function replyFor(rule: Rule | undefined, request: ScriptedRequest): Promise<Reply> {
    if (!rule) return `echo: ${lastUserText(request.body).slice(0, 200)}`;
    return typeof rule.reply === 'function' ? rule.reply(request) : rule.reply;
  }
}

interface EmbeddingBody {
  readonly model?: string;
  readonly input?: unknown;
  readonly dimensions?: number;
}

function freshStats(): ModelServerStats {
  return {
    total: 0,
    byRole: {},
    faults: {},
    inFlight: 0,
    maxInFlight: 0,
    embeddings: 0,
    answered: 0,
    abandoned: 0,
    answeredByRole: {},
    billedByRole: {},
    connections: 0,
  };
}

function normalizeReply(reply: Reply): {
  content?: string;
  toolCalls?: readonly ScriptedToolCall[];
  finishReason?: string;
  headers?: ReplyHeaders;
} {
  if (typeof reply === 'string') return { content: reply };
  if ('toolCalls' in reply)
    return { toolCalls: reply.toolCalls, content: reply.content, headers: reply.headers };
  return reply;
}

/** The role of a request, by the convention in the module comment; `header` is the role header's value. */
export function roleOf(body: ChatRequestBody, header?: string | string[]): string | undefined {
  const fromHeader = Array.isArray(header) ? header[0] : header;
  if (fromHeader) return fromHeader;
  const fromMetadata = body.metadata?.['role'];
  if (typeof fromMetadata === 'string') return fromMetadata;
  const system = body.messages?.find((m) => m.role === 'system' || m.role === 'developer');
  const text = system ? textOf(system.content) : '';
  return /^role:\s*([\w.-]+)\s*$/m.exec(text)?.[1];
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('\n');
  }
  return '';
}

function lastUserText(body: ChatRequestBody): string {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  return textOf(users[users.length - 1]?.content);
}

function tokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** A unit vector derived from sha256 of the text: equal texts get equal vectors, others differ. */
function embed(text: string, dimensions: number): number[] {
  const values: number[] = [];
  for (let block = 0; values.length < dimensions; block++) {
    const digest = createHash('sha256').update(`${block}\n${text}`).digest();
    for (let i = 0; i + 1 < digest.length && values.length < dimensions; i += 2) {
      values.push(digest.readUInt16BE(i) / 32767.5 - 1);
    }
  }
  const norm = Math.sqrt(values.reduce((sum, v) => sum + v * v, 0)) || 1;
  return values.map((v) => v / norm);
}

/** sha256 (hex) of `value` as JSON with the keys of every object sorted. */
export function canonicalHash(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash('sha256')
    .update(JSON.stringify(sorted(value)))
    .digest('hex');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(
  res: http.ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
