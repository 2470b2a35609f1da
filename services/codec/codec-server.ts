import http from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { authorizationCheck, HttpError, readBody, sendJson } from '../http/json-http.js';
import { listenMeasured } from '../http/request-metrics.js';

/**
 * Temporal's remote codec protocol over HTTP, for the Temporal UI ("Remote Codec Endpoint") and
 * the Temporal CLI (`--codec-endpoint`, `--codec-auth`): `POST /encode` and `POST /decode` take
 * and return `{"payloads": [{"metadata": {k: base64}, "data": base64}]}` (protobuf JSON of
 * Payloads). The browser calls it from the UI's origin, so it answers CORS preflights for the
 * allowed origins. With `authorization` set, POSTs must carry exactly that `Authorization` header.
 */

/** Options of {@link startCodecServer}. */
export interface CodecServerOptions {
  readonly codec: PayloadCodec;
  /** 0 = any free port. */
  readonly port: number;
  /** Default 127.0.0.1: the codec decrypts for whoever reaches it. */
  readonly host?: string;
  /** Browser origins allowed to call it. Default: the local Temporal UI. */
  readonly allowedOrigins?: readonly string[];
  /** When set, the exact `Authorization` header value required on /encode and /decode. */
  readonly authorization?: string;
  /** Largest request body. Default 16 MiB. */
  readonly maxBodyBytes?: number;
  /** Set (MOCKWORLD_METRICS_ADDRESS, host:port): serves its requests by route and outcome there. */
  readonly metricsAddress?: string;
}

/** The route label of a codec request: `encode`, `decode`, `preflight` (CORS) or `other`. */
export function codecRoute(method: string, path: string): string {
  if (method === 'OPTIONS') return 'preflight';
  const route = path.replace(/\/+$/, '');
  return route === '/encode' ? 'encode' : route === '/decode' ? 'decode' : 'other';
}

/** A running codec server. */
export interface CodecServer {
  /** Base URL, e.g. http://127.0.0.1:8888 (what the UI's "Remote Codec Endpoint" takes). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** The Temporal UI of the local stack, by both of its usual names. */
export const DEFAULT_ALLOWED_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'];

/** Starts the server; it runs until `close()`. */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const origins = new Set(options.allowedOrigins ?? DEFAULT_ALLOWED_ORIGINS);
  const maxBodyBytes = options.maxBodyBytes ?? 16 * 1024 * 1024;
  const authorized = authorizationCheck(options.authorization);

  const server = http.createServer((req, res) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent) sendJson(res, status, { error: message }, status === 413);
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const route = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (req.method === 'OPTIONS') {
      // Preflight: browsers send no credentials here, so it is answered without the auth check.
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': 'Content-Type, X-Namespace, Authorization',
        'Access-Control-Max-Age': '600',
      });
      res.end();
      return;
    }
    if (req.method !== 'POST' || (route !== '/encode' && route !== '/decode')) {
      throw new HttpError(404, `no route ${req.method} ${route}; use POST /encode or POST /decode`);
    }
    if (!authorized(req.headers.authorization)) {
      throw new HttpError(401, 'missing or wrong Authorization header');
    }
    const payloads = parsePayloads(await readBody(req, maxBodyBytes));
    let result: Payload[];
    try {
      result =
        route === '/encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
    } catch (error) {
      throw new HttpError(400, `cannot ${route.slice(1)}: ${(error as Error).message}`);
    }
    sendJson(res, 200, { payloads: result.map(toJson) });
  }

  return listenMeasured(
    server,
    { service: 'codec', routeOf: codecRoute, metricsAddress: options.metricsAddress },
    options.port,
    options.host ?? '127.0.0.1',
  );
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function bytes(value: unknown, where: string): Uint8Array {
  if (typeof value !== 'string' || !BASE64.test(value)) throw new HttpError(400, `${where} must be base64`);
  return new Uint8Array(Buffer.from(value, 'base64'));
}

/** The request's payloads, from protobuf JSON (bytes as base64); a malformed body is a 400. */
function parsePayloads(body: Buffer): Payload[] {
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
  const list = (document as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(list)) throw new HttpError(400, 'the body must be {"payloads": [...]}');
  return list.map((item, i) => {
    if (typeof item !== 'object' || item === null)
      throw new HttpError(400, `payloads[${i}] must be an object`);
    const { metadata, data } = item as { metadata?: unknown; data?: unknown };
    if (
      metadata !== undefined &&
      (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    ) {
      throw new HttpError(400, `payloads[${i}].metadata must be an object`);
    }
    const meta: Record<string, Uint8Array> = {};
    for (const [key, value] of Object.entries(metadata ?? {})) {
      Object.defineProperty(meta, key, {
        value: bytes(value, `payloads[${i}].metadata.${key}`),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return {
      metadata: meta,
      data: data === undefined ? new Uint8Array() : bytes(data, `payloads[${i}].data`),
    };
  });
}

function toJson(payload: Payload) {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value ?? []).toString('base64'),
      ]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  };
}
