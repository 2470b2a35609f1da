import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { redactUrl } from '../activities/store/db.js';
import { migrate } from '../activities/store/migrate.js';
import { loadEnvironment } from '../schemas/environment.js';
import { WorldServiceConfigSchema } from '../schemas/world-service.js';
import { startWorldServer } from '../services/world/server.js';
import { UsageError } from './usage.js';

/** `mockworld world`: the world service for external RL frameworks, until Ctrl-C. */
export async function worldService(values: {
  port?: string;
  host?: string;
  config?: string;
}): Promise<number> {
  const env = loadEnvironment();
  const text = values.config ? await readFile(values.config, 'utf8') : '{}';
  const parsed = WorldServiceConfigSchema.safeParse(parseYaml(text) ?? {});
  if (!parsed.success)
    throw new UsageError(
      `${values.config}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  const port = values.port === undefined ? 11438 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new UsageError(`--port must be a port number, got ${values.port}`);
  const host = values.host ?? '127.0.0.1';
  if (!['127.0.0.1', 'localhost', '::1'].includes(host) && !env.MOCKWORLD_WORLD_AUTH)
    throw new UsageError(
      `--host ${host} opens the world service (and the models it pays for) to the network: set MOCKWORLD_WORLD_AUTH first`,
    );
  await migrate(env.DATABASE_URL);
  const server = await startWorldServer({
    databaseUrl: env.DATABASE_URL,
    config: parsed.data,
    port,
    host,
    authorization: env.MOCKWORLD_WORLD_AUTH,
    metricsAddress: env.MOCKWORLD_METRICS_ADDRESS,
  });
  console.log(`world service listening on ${server.url} (OpenEnv: ${server.url.replace(/^http/, 'ws')}/ws)`);
  if (env.MOCKWORLD_METRICS_ADDRESS)
    console.error(`metrics: http://${env.MOCKWORLD_METRICS_ADDRESS}/metrics`);
  console.error(
    `tasks, tool mappings, model cache and ledger: ${redactUrl(env.DATABASE_URL)} (usage under run ${parsed.data.ledgerRunId})\n` +
      `${env.MOCKWORLD_WORLD_AUTH ? 'requests must carry the Authorization header of MOCKWORLD_WORLD_AUTH\n' : ''}Ctrl-C to stop`,
  );
  await new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  return 0;
}
