import { WorldServiceConfigSchema } from '../schemas/world-service.js';
import { startWorldServer, type WorldServer } from '../services/world/server.js';
import type { ModelServer } from './model-server.js';

/** What a test's world differs in: its ledger run id, key, metrics, episode bound, endpoint settings. */
export interface ScriptedWorldOptions {
  readonly ledgerRunId: string;
  readonly authorization?: string;
  readonly metricsAddress?: string;
  readonly maxTurns?: number;
  /** Extra endpoint settings of every role, e.g. `{ maxRetries: 0 }`. */
  readonly endpoint?: Record<string, unknown>;
}

/**
 * The world service on `databaseUrl`, its tool simulator, user simulator and judge all answered by
 * the scripted model server `models` (its script tells the roles apart), on a free loopback port.
 */
export function startScriptedWorld(
  databaseUrl: string,
  models: ModelServer,
  options: ScriptedWorldOptions,
): Promise<WorldServer> {
  const endpoint = { baseUrl: models.url, model: 'scripted', ...options.endpoint };
  return startWorldServer({
    databaseUrl,
    config: WorldServiceConfigSchema.parse({
      models: { toolSimulator: { endpoint }, userSimulator: { endpoint }, judge: { endpoint } },
      ledgerRunId: options.ledgerRunId,
      ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
    }),
    port: 0,
    ...(options.authorization !== undefined ? { authorization: options.authorization } : {}),
    ...(options.metricsAddress !== undefined ? { metricsAddress: options.metricsAddress } : {}),
  });
}
