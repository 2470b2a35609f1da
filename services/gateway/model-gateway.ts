import http from 'node:http';
import { z } from 'zod';
import { GATEWAY_COMPLETE_PATH, type GatewayError } from '../../activities/llm/gateway-client.js';
import { createCallCompleter } from '../../activities/llm/model-client.js';
import type { ModelCall } from '../../activities/llm/types.js';
import { GatewayRequestSchema, type GatewayRequest } from '../../schemas/gateway-request.js';
import { authorizationCheck, HttpError, readBody, sendJson } from '../http/json-http.js';
import { listenMeasured } from '../http/request-metrics.js';

/**
 * The model gateway: one long-lived process that sends the CPU workers' model calls upstream and
 * writes each answer to the `llm_calls` ledger itself. A worker killed mid-call loses only its
 * wait: the gateway still stores the answer it paid for, and the retried activity (on any worker)
 * joins the call still in flight or reads the stored answer, so nothing is paid twice. Identical
 * calls from different workers also share one upstream request here.
 */

/** Options of {@link startModelGateway}. */
export interface ModelGatewayOptions {
  /** PostgreSQL with the migrated `llm_calls` ledger (the workers' DATABASE_URL). */
  readonly databaseUrl: string;
  /** 0 = any free port. */
  readonly port: number;
  /** Default 127.0.0.1: the gateway spends the API keys of its environment for whoever reaches it. */
  readonly host?: string;
  /** When set, the exact `Authorization` header value required (MOCKWORLD_MODEL_GATEWAY_AUTH). */
  readonly authorization?: string;
  /** Largest request body. Default 64 MiB (long transcripts). */
  readonly maxBodyBytes?: number;
  /**
   * Set (MOCKWORLD_METRICS_ADDRESS, host:port): serves mockworld's Prometheus series there, with
   * this gateway's requests by route and outcome and the model calls it pays for.
   */
  readonly metricsAddress?: string;
}

/** A running gateway. */
export interface ModelGateway {
  /** Base URL for MOCKWORLD_MODEL_GATEWAY_URL, e.g. http://127.0.0.1:11437. */
  readonly url: string;
  /** Calls being completed now (some may have lost their caller). */
  inFlight(): number;
  /**
   * Stops taking new calls and waits (up to `timeoutMs`) until the calls in flight are answered and
   * stored: they are paid for, and a retry would pay again. Then closes. Returns the calls cut off.
   */
  drain(timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Variables the gateway never sends as an API key, whatever a request names: its own settings and
 * the database password. A request names the endpoint and its key variable, so without this anyone
 * who reaches the gateway could have it send those to a host of their choosing.
 */
const NEVER_KEYS = /^(DATABASE_URL|PG[A-Z]*|MOCKWORLD_.*|TEMPORAL_.*)$/;

/** Starts the gateway; it runs until `close()`. */
export async function startModelGateway(options: ModelGatewayOptions): Promise<ModelGateway> {
  const complete = createCallCompleter(options.databaseUrl);
  const authorized = authorizationCheck(options.authorization);
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024 * 1024;
  let inFlight = 0;
  let draining = false;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const route = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && route === '/health') return sendJson(res, 200, { ok: true, inFlight });
    if (draining) throw new HttpError(503, 'the gateway is shutting down');
    if (req.method !== 'POST' || route !== GATEWAY_COMPLETE_PATH) {
      throw new HttpError(404, `no route ${req.method} ${route}; use POST ${GATEWAY_COMPLETE_PATH}`);
    }
    const parsed = await readGatewayCall(req, authorized, maxBodyBytes);
    // No abort signal: the call is finished and stored even if the worker that asked is gone.
    inFlight++;
    try {
      const result = await complete(parsed.call as unknown as ModelCall, parsed.responseFormat);
      if (!res.destroyed) sendJson(res, 200, result);
    } catch (error) {
      if (!res.destroyed) sendJson(res, 502, { error: describe(error) });
    } finally {
      inFlight--;
    }
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent)
        sendJson(res, status, { error: { name: 'GatewayError', message } }, status === 413);
      else res.destroy();
    });
  });
  // Model calls may take minutes (retries, long generations): no server-side request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  const routeOf = (method: string, route: string) =>
    (method === 'GET' && route === '/health') || (method === 'POST' && route === GATEWAY_COMPLETE_PATH)
      ? route
      : 'other';
  const listening = await listenMeasured(
    server,
    { service: 'gateway', routeOf, metricsAddress: options.metricsAddress },
    options.port,
    options.host ?? '127.0.0.1',
  );
  return {
    url: listening.url,
    inFlight: () => inFlight,
    async drain(timeoutMs) {
      draining = true;
      server.close(); // no new connections; open ones finish their calls
      const deadline = Date.now() + timeoutMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      const cut = inFlight;
      await listening.close();
      return cut;
    },
    close: listening.close,
  };
}

/** The request's model call, once the caller is authorized and the body is a valid call; an HttpError otherwise. */
async function readGatewayCall(
  req: http.IncomingMessage,
  authorized: ReturnType<typeof authorizationCheck>,
  maxBodyBytes: number,
): Promise<GatewayRequest> {
  if (!authorized(req.headers.authorization))
    throw new HttpError(401, 'missing or wrong Authorization header');
  // Browsers may send simple cross-site POSTs without a preflight: refuse anything from a page.
  if (req.headers.origin !== undefined) throw new HttpError(403, 'requests from browsers are refused');
  if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
    throw new HttpError(415, 'the body must be application/json');
  }
  const body = await readBody(req, maxBodyBytes);
  let parsed: GatewayRequest;
  try {
    parsed = GatewayRequestSchema.parse(JSON.parse(body.toString('utf8')));
  } catch (error) {
    const detail = error instanceof z.ZodError ? z.prettifyError(error) : 'the body is not JSON';
    throw new HttpError(400, `not a model call: ${detail}`);
  }
  const keyEnv = parsed.call.endpoint.apiKeyEnv;
  if (keyEnv !== undefined && NEVER_KEYS.test(keyEnv)) {
    throw new HttpError(
      403,
      `call.endpoint.apiKeyEnv: ${keyEnv} is not an API key variable the gateway sends`,
    );
  }
  return parsed;
}

/** The error's class name and fields, for the worker to rebuild (gateway-client.ts). */
function describe(error: unknown): GatewayError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { endpoint, model, status, detail, attempts, lastStatus, lastReason } =
    error as Partial<GatewayError>;
  return {
    name: error.name,
    message: error.message,
    endpoint,
    model,
    status,
    detail,
    attempts,
    lastStatus,
    lastReason,
  };
}
