import { migrate } from '../activities/store/migrate.js';
import { redactUrl } from '../activities/store/db.js';
import { loadEnvironment } from '../schemas/environment.js';
import { DEFAULT_ALLOWED_ORIGINS, startCodecServer } from '../services/codec/codec-server.js';
import { payloadCodecFromEnvironment } from '../services/codec/payload-codec.js';
import { startModelGateway } from '../services/gateway/model-gateway.js';
import { temporalTarget } from '../services/temporal/connection.js';
import { isLoopback } from '../services/viewer/access.js';
import { startViewer } from '../services/viewer/server.js';
import { UsageError } from './usage.js';

/** Serves Temporal's remote codec protocol with the payload key, until Ctrl-C (docs/encryption.md). */
export async function codecServer(values: {
  port?: string;
  host?: string;
  origin?: string[];
}): Promise<number> {
  const env = loadEnvironment();
  const codec = payloadCodecFromEnvironment(env);
  if (!codec)
    throw new UsageError(
      'mockworld codec-server needs MOCKWORLD_PAYLOAD_KEY, the key the workers encrypt with',
    );
  const port = parsePort(values.port, env.MOCKWORLD_CODEC_PORT);
  const uiOrigins = [`http://localhost:${env.TEMPORAL_UI_PORT}`, `http://127.0.0.1:${env.TEMPORAL_UI_PORT}`];
  const allowedOrigins = values.origin?.length
    ? values.origin
    : [...new Set([...DEFAULT_ALLOWED_ORIGINS, ...uiOrigins])];
  const server = await startCodecServer({
    codec,
    port,
    host: values.host,
    allowedOrigins,
    authorization: env.MOCKWORLD_CODEC_AUTH,
    metricsAddress: env.MOCKWORLD_METRICS_ADDRESS,
  });
  console.log(`codec server listening on ${server.url} (key ${codec.keyId})`);
  console.error(
    `in the Temporal UI: Codec Server (top bar) > Remote Codec Endpoint = ${server.url}\n` +
      `browser origins allowed: ${allowedOrigins.join(', ')}` +
      `${env.MOCKWORLD_CODEC_AUTH ? '\nrequests must carry the Authorization header of MOCKWORLD_CODEC_AUTH' : ''}\nCtrl-C to stop`,
  );
  await untilInterrupted();
  await server.close();
  return 0;
}

/** Resolves at Ctrl-C or SIGTERM: the long-running commands then close what they serve. */
function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

/** Longest wait, at shutdown, for the gateway's calls in flight (model calls retry for minutes). */
const GATEWAY_DRAIN_MS = 10 * 60_000;

/** Serves the model gateway (docs/cluster.md) until Ctrl-C. */
export async function modelGateway(values: { port?: string; host?: string }): Promise<number> {
  const env = loadEnvironment();
  const port = parsePort(values.port, 11437);
  const loopback = ['127.0.0.1', 'localhost', '::1'].includes(values.host ?? '127.0.0.1');
  if (!loopback && !env.MOCKWORLD_MODEL_GATEWAY_AUTH) {
    throw new UsageError(
      `--host ${values.host} opens the gateway (and the API keys it spends) to the network: ` +
        'set MOCKWORLD_MODEL_GATEWAY_AUTH on the gateway and the workers first',
    );
  }
  await migrate(env.DATABASE_URL);
  const gateway = await startModelGateway({
    databaseUrl: env.DATABASE_URL,
    port,
    host: values.host,
    authorization: env.MOCKWORLD_MODEL_GATEWAY_AUTH,
    metricsAddress: env.MOCKWORLD_METRICS_ADDRESS,
  });
  console.log(`model gateway listening on ${gateway.url}`);
  if (env.MOCKWORLD_METRICS_ADDRESS)
    console.error(`metrics: http://${env.MOCKWORLD_METRICS_ADDRESS}/metrics`);
  console.error(
    `ledger: ${redactUrl(env.DATABASE_URL)}\n` +
      `workers: MOCKWORLD_MODEL_GATEWAY_URL=${gateway.url} mockworld worker` +
      `${env.MOCKWORLD_MODEL_GATEWAY_AUTH ? ' (with the same MOCKWORLD_MODEL_GATEWAY_AUTH)' : ''}\nCtrl-C to stop`,
  );
  await untilInterrupted();
  // Calls in flight are paid for: let them be answered and stored (a second Ctrl-C stops at once).
  console.error(
    `stopping: waiting for ${gateway.inFlight()} call(s) in flight to be stored (Ctrl-C again to stop now)`,
  );
  const cut = await Promise.race([gateway.drain(GATEWAY_DRAIN_MS), untilInterrupted().then(() => -1)]);
  if (cut !== 0) {
    await gateway.close();
    console.error(`stopped with calls in flight; their retries will pay for them again`);
  }
  return 0;
}

/**
 * Serves the results viewer (docs/viewer.md) until Ctrl-C: read-only pages over the runs'
 * PostgreSQL data, on 127.0.0.1 unless --host names another address and MOCKWORLD_VIEWER_TOKEN is set.
 */
export async function viewer(values: { port?: string; host?: string }): Promise<number> {
  const env = loadEnvironment();
  const host = values.host ?? '127.0.0.1';
  if (!isLoopback(host) && !env.MOCKWORLD_VIEWER_TOKEN) {
    throw new UsageError(
      `--host ${host} opens the viewer (every run's tasks, transcripts and metrics) to the network: ` +
        'set MOCKWORLD_VIEWER_TOKEN (16+ characters) first',
    );
  }
  const ui = {
    url: env.MOCKWORLD_TEMPORAL_UI_URL ?? `http://localhost:${env.TEMPORAL_UI_PORT}`,
    namespace: temporalTarget().namespace,
  };
  const server = await startViewer({
    databaseUrl: env.DATABASE_URL,
    port: parsePort(values.port, env.MOCKWORLD_VIEWER_PORT),
    host,
    token: env.MOCKWORLD_VIEWER_TOKEN,
    ui,
    metricsAddress: env.MOCKWORLD_METRICS_ADDRESS,
  });
  console.log(
    `viewer listening on ${server.url}${env.MOCKWORLD_VIEWER_TOKEN ? ' (open it with ?token=<MOCKWORLD_VIEWER_TOKEN>)' : ''}`,
  );
  console.error(
    `data: ${redactUrl(env.DATABASE_URL)} (read-only)\nTemporal UI links: ${ui.url}\nCtrl-C to stop`,
  );
  if (env.MOCKWORLD_METRICS_ADDRESS)
    console.error(`metrics: http://${env.MOCKWORLD_METRICS_ADDRESS}/metrics`);
  await untilInterrupted();
  await server.close();
  return 0;
}

function parsePort(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > 65_535)
    throw new UsageError(`--port must be a port number, got ${value}`);
  return Number(value);
}
