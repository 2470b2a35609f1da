import path from 'node:path';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { getPool, redactUrl } from '../activities/store/db.js';
import { migrate } from '../activities/store/migrate.js';
import { embeddedModelUrl, loadEnvironment, type Environment } from '../schemas/environment.js';
import { CODEC_COMPONENT, codecUp, localCodecEndpoint } from './codec-stack.js';
import { ensureLlamaCpp } from './embedded-model/llama-runtime.js';
import { ensureEmbeddedModel } from './embedded-model/fetch-model.js';
import { nodeEntryArgs } from './paths.js';
import { livePid, managedProcess, spawnDetached, stopManaged, writePid } from './processes.js';
import { MOCKWORLD_SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';
import { registerSearchAttributes } from './search-attributes.js';
import { ensureTemporalCli } from './temporal-cli.js';
import { startDevServer, waitForFrontend } from './temporal-dev-server.js';
import { TRAINER_COMPONENTS } from './trainer-stack.js';

/** One line of `mockworld stack status`. */
export interface ComponentStatus {
  readonly component: string;
  readonly where: string;
  readonly state: 'up' | 'down';
  readonly detail: string;
}

function isLocalAddress(address: string): boolean {
  return /^(127\.0\.0\.1|localhost|\[::1\]):\d+$/.test(address);
}

/**
 * The Temporal frontend the stack works with, as Temporal's environment configuration resolves it
 * (services/temporal/connection.ts; the CLI passes it). Default: TEMPORAL_ADDRESS/NAMESPACE, plain.
 */
export interface StackTemporal {
  readonly address: string;
  readonly namespace: string;
  readonly connection: ConnectionOptions;
}

const plainTemporal = (env: Environment): StackTemporal => ({
  address: env.TEMPORAL_ADDRESS,
  namespace: env.TEMPORAL_NAMESPACE,
  connection: { address: env.TEMPORAL_ADDRESS },
});

/** A frontend the stack may start itself: this machine's, reached without TLS or an API key. */
const startable = (temporal: StackTemporal) =>
  isLocalAddress(temporal.address) && !temporal.connection.tls && !temporal.connection.apiKey;

function temporalPort(address: string): number {
  return Number(address.split(':').pop());
}

async function temporalAnswers(temporal: StackTemporal): Promise<boolean> {
  try {
    await waitForFrontend(temporal.connection, 1_500);
    return true;
  } catch {
    return false;
  }
}

async function httpAnswers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return response.status < 500;
  } catch {
    return false;
  }
}

/**
 * Brings up everything a laptop run needs and is idempotent: PostgreSQL database + migrations,
 * a Temporal dev server with persistent state and the Web UI (unless TEMPORAL_ADDRESS already
 * answers), the search attributes, and the embedded model server unless MOCKWORLD_MODEL_URL is set.
 * With MOCKWORLD_PAYLOAD_KEY set, also the codec server, and the UI starts with it as its codec endpoint.
 */
export async function stackUp(
  log: (line: string) => void,
  env: Environment = loadEnvironment(),
  temporal: StackTemporal = plainTemporal(env),
): Promise<void> {
  const applied = await migrate(env.DATABASE_URL);
  log(
    `postgres   ${redactUrl(env.DATABASE_URL)}  migrations applied now: ${applied.length ? applied.join(', ') : 'none needed'}`,
  );

  const address = temporal.address;
  // Encrypted payloads: the local UI decodes through the stack's codec server, set at its start.
  const codec = startable(temporal) ? await codecUp(log, env) : undefined;
  if (await temporalAnswers(temporal)) {
    log(`temporal   ${address}  already running`);
    if (codec)
      log(
        `           its UI decodes through ${codec} only if it was started with MOCKWORLD_PAYLOAD_KEY set; ` +
          '`mockworld stack down && mockworld stack up` restarts it with the codec endpoint',
      );
  } else if (startable(temporal)) {
    const cli = await ensureTemporalCli(log);
    const proc = managedProcess(env.MOCKWORLD_HOME, 'temporal');
    const server = await startDevServer({
      cli,
      port: temporalPort(address),
      uiPort: env.TEMPORAL_UI_PORT,
      uiCodecEndpoint: codec,
      dbFile: path.join(env.MOCKWORLD_HOME, 'temporal.db'),
      logFile: proc.logFile,
      detached: true,
    });
    await writePid(proc, server.process.pid!);
    log(`temporal   ${address}  started (state in ${path.join(env.MOCKWORLD_HOME, 'temporal.db')})`);
  } else {
    throw new Error(
      `Temporal is not reachable at ${address}. Start your cluster's frontend or set TEMPORAL_ADDRESS ` +
        'to a reachable host:port (unset it to run the embedded dev server).',
    );
  }
  const connection = await Connection.connect(temporal.connection);
  try {
    const added = await registerSearchAttributes(connection, temporal.namespace);
    log(`search     ${added.length ? `registered ${added.join(', ')}` : 'attributes already registered'}`);
  } catch (error) {
    // A managed cluster (Temporal Cloud) may keep search attributes out of an API key's reach;
    // runs only lack their UI filters until someone with the rights adds them, so say how.
    if (startable(temporal)) throw error;
    log(
      `search     not registered (${(error as Error).message}); add them in the namespace's settings ` +
        `(${MOCKWORLD_SEARCH_ATTRIBUTES.map((key) => `${key.name} ${key.type}`).join(', ')}), then run stack up again`,
    );
  } finally {
    await connection.close();
  }
  if (startable(temporal)) log(await uiLine(env, temporal));

  if (env.MOCKWORLD_MODEL_URL) {
    log(`model      ${env.MOCKWORLD_MODEL_URL}  (MOCKWORLD_MODEL_URL)`);
    return;
  }
  await embeddedModelUp(log, env);
}

/** Starts the embedded model server unless one answers, installing its model and runtime first. */
async function embeddedModelUp(log: (line: string) => void, env: Environment): Promise<void> {
  const modelUrl = embeddedModelUrl(env);
  if (await httpAnswers(`${modelUrl}/models`)) {
    log(`model      ${modelUrl}  embedded model already running`);
    return;
  }
  const modelPath = await ensureEmbeddedModel();
  await ensureLlamaCpp((line) => log(`model      ${line}`));
  const proc = managedProcess(env.MOCKWORLD_HOME, 'embedded-model');
  await spawnDetached(proc, process.execPath, [
    ...nodeEntryArgs('services/embedded-model/server'),
    '--port',
    String(env.MOCKWORLD_EMBEDDED_MODEL_PORT),
    '--model',
    modelPath,
  ]);
  const deadline = Date.now() + 120_000;
  while (!(await httpAnswers(`${modelUrl}/models`))) {
    if (!(await livePid(proc))) throw new Error(`the embedded model server exited; see ${proc.logFile}`);
    if (Date.now() > deadline)
      throw new Error(`the embedded model server did not answer in 120 s; see ${proc.logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  log(`model      ${modelUrl}  embedded SmolLM2-135M-Instruct started`);
}

/** Stops what `stackUp` started (never an external cluster). Data files stay. */
export async function stackDown(
  log: (line: string) => void,
  env: Environment = loadEnvironment(),
): Promise<void> {
  for (const name of [...TRAINER_COMPONENTS, 'embedded-model', CODEC_COMPONENT, 'temporal']) {
    const stopped = await stopManaged(managedProcess(env.MOCKWORLD_HOME, name));
    log(`${name.padEnd(15)} ${stopped ? 'stopped' : 'was not running'}`);
  }
}

/** Reports whether each component answers, and where. */
export async function stackStatus(
  env: Environment = loadEnvironment(),
  temporal: StackTemporal = plainTemporal(env),
): Promise<ComponentStatus[]> {
  const rows: ComponentStatus[] = [];
  try {
    const { rows: versions } = await getPool(env.DATABASE_URL).query<{ v: number }>(
      'SELECT max(version) AS v FROM schema_migrations',
    );
    rows.push({
      component: 'postgres',
      where: redactUrl(env.DATABASE_URL),
      state: 'up',
      detail: `schema v${versions[0]?.v}`,
    });
  } catch (error) {
    rows.push({
      component: 'postgres',
      where: redactUrl(env.DATABASE_URL),
      state: 'down',
      detail: (error as Error).message.slice(0, 80),
    });
  }
  const temporalUp = await temporalAnswers(temporal);
  rows.push({
    component: 'temporal',
    where: temporal.address,
    state: temporalUp ? 'up' : 'down',
    detail: `namespace ${temporal.namespace}`,
  });
  if (startable(temporal)) {
    const ui = `http://localhost:${env.TEMPORAL_UI_PORT}`;
    rows.push({ component: 'web ui', where: ui, state: (await httpAnswers(ui)) ? 'up' : 'down', detail: '' });
    const codec = localCodecEndpoint(env);
    if (codec)
      rows.push({
        component: 'codec',
        where: codec,
        state: (await httpAnswers(codec)) ? 'up' : 'down',
        detail: 'decrypts payloads for the UI',
      });
  }
  const modelUrl = env.MOCKWORLD_MODEL_URL ?? embeddedModelUrl(env);
  rows.push({
    component: 'model',
    where: modelUrl,
    state: (await httpAnswers(`${modelUrl}/models`)) ? 'up' : 'down',
    detail: env.MOCKWORLD_MODEL_URL ? 'MOCKWORLD_MODEL_URL' : 'embedded',
  });
  return rows;
}

/**
 * The Web UI's address as it answers: TEMPORAL_UI_PORT, else where a dev server started by hand
 * serves it (`temporal server start-dev --port P` puts its UI on P + 1000 unless told otherwise).
 */
export async function uiLine(env: Environment, temporal: StackTemporal): Promise<string> {
  const ui = `http://localhost:${env.TEMPORAL_UI_PORT}`;
  if (await httpAnswers(ui)) return `ui         ${ui}`;
  const frontendPort = Number(temporal.address.split(':').pop());
  const usual = `http://localhost:${frontendPort + 1000}`;
  if (
    Number.isInteger(frontendPort) &&
    frontendPort + 1000 !== env.TEMPORAL_UI_PORT &&
    (await httpAnswers(usual))
  )
    return `ui         ${usual}  (the running server's; nothing answers at TEMPORAL_UI_PORT ${env.TEMPORAL_UI_PORT})`;
  return `ui         nothing answers at ${ui}; the running server's UI is on another port: set TEMPORAL_UI_PORT to it`;
}
