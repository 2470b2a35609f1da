import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalHash } from './model-server.js';

/**
 * A transparent HTTP proxy in front of a real model endpoint (e.g. the Python policy server) that
 * counts what a kill test needs to know about the calls going through it: answers delivered in
 * full, requests whose client went away first, and requests on the wire now. It forwards every
 * request unchanged and never alters an answer; an optional delay before forwarding keeps calls
 * in flight long enough for a test to kill their caller mid-call.
 */
export interface CountingProxyStats {
  /** Requests received. */
  total: number;
  /** Requests being served now. */
  inFlight: number;
  /** Answers handed to the client in full (what a real endpoint would bill). */
  answered: number;
  /** Requests whose client disconnected before the answer was delivered. */
  abandoned: number;
}

/** One answer delivered in full: its status, and the response headers a test asked to keep. */
export interface ProxiedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The request's `X-Mockworld-Role` header. */
  readonly role: string | undefined;
  /** When the answer was handed over in full (ms since epoch). */
  readonly at: number;
  /** When the request arrived (ms since epoch). */
  readonly receivedAt: number;
  /** The client's TCP port: names the connection, and so the process, that received the answer. */
  readonly remotePort: number | undefined;
  /** {@link canonicalHash} of the request body: the same call asked twice has the same hash. */
  readonly bodyHash: string;
}

/** A running proxy. */
export interface CountingProxy {
  /** The proxy's address with the target's path (e.g. `http://127.0.0.1:PORT/v1`). */
  readonly url: string;
  readonly stats: CountingProxyStats;
  /** Answers delivered in full, in order of delivery. */
  readonly answers: readonly ProxiedAnswer[];
  /** Stops listening and drops every connection. */
  close(): Promise<void>;
}

/** Options of {@link startCountingProxy}. */
export interface CountingProxyOptions {
  /** Delay before a request is forwarded, in ms. Default 0. */
  readonly latencyMs?: number;
  /** Response headers (lower case) kept in {@link CountingProxy.answers}. Default none. */
  readonly keepHeaders?: readonly string[];
}

/** Starts a proxy on 127.0.0.1 at a free port in front of `target` (a base URL such as `http://h:p/v1`). */
export async function startCountingProxy(
  target: string,
  options: CountingProxyOptions = {},
): Promise<CountingProxy> {
  const upstream = new URL(target);
  const latencyMs = options.latencyMs ?? 0;
  const keep = options.keepHeaders ?? [];
  const stats: CountingProxyStats = { total: 0, inFlight: 0, answered: 0, abandoned: 0 };
  const answers: ProxiedAnswer[] = [];

  const server = http.createServer((req, res) => {
    const receivedAt = Date.now();
    stats.total += 1;
    stats.inFlight += 1;
    let delivered = false;
    res.once('finish', () => (delivered = true));
    res.once('close', () => {
      stats.inFlight -= 1;
      if (!delivered) stats.abandoned += 1;
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      setTimeout(() => {
        if (res.destroyed) return; // the client went away while we waited
        const forwarded = http.request(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, host: upstream.host },
          },
          (answer) => {
            const role = req.headers['x-mockworld-role'];
            const kept = Object.fromEntries(keep.map((h) => [h, headerText(answer.headers[h])]));
            res.once('finish', () => {
              stats.answered += 1;
              answers.push({
                status: answer.statusCode ?? 0,
                headers: kept,
                role: Array.isArray(role) ? role[0] : role,
                at: Date.now(),
                receivedAt,
                remotePort: req.socket.remotePort,
                bodyHash: bodyHash(Buffer.concat(chunks)),
              });
            });
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forwarded.once('error', () => res.destroy());
        res.once('close', () => forwarded.destroy()); // a dead client cancels the upstream call
        forwarded.end(Buffer.concat(chunks));
      }, latencyMs);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname.replace(/\/+$/, '')}`,
    stats,
    answers,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The request body's {@link canonicalHash} (its raw bytes' when it is not JSON). */
function bodyHash(body: Buffer): string {
  try {
    return canonicalHash(JSON.parse(body.toString('utf8')));
  } catch {
    return canonicalHash(body.toString('base64'));
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
