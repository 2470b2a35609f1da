import type { ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';

/**
 * Where and how every mockworld process reaches Temporal (the CLI, the client, the CPU workers,
 * `mockworld stack`), read through Temporal's own environment configuration so one set of
 * settings serves mockworld, the `temporal` CLI and any SDK client: the profile file
 * (TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE picks a
 * profile) overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
 * TEMPORAL_TLS_CLIENT_CERT_PATH/_DATA, TEMPORAL_TLS_CLIENT_KEY_PATH/_DATA,
 * TEMPORAL_TLS_SERVER_CA_CERT_PATH/_DATA, TEMPORAL_TLS_SERVER_NAME and TEMPORAL_GRPC_META_*.
 * The Python trainer reads the same (temporalio.envconfig).
 */

/** The frontend when neither a profile nor TEMPORAL_ADDRESS names one: the local stack's. */
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';

/** The connection settings both SDK connections take (client `Connection`, worker `NativeConnection`). */
export type TemporalConnectionOptions = Pick<ConnectionOptions, 'tls' | 'metadata'> & {
  readonly address: string;
  readonly apiKey?: string;
};

/** A resolved Temporal frontend: where, which namespace, and the options to connect with. */
export interface TemporalTarget {
  readonly address: string;
  readonly namespace: string;
  readonly connection: TemporalConnectionOptions;
  /** What is in use, for messages (never the secrets themselves): e.g. "TLS, client certificate, API key". */
  readonly security: string;
}

/** The environment configuration cannot be used (a bad profile file, a missing certificate file). */
export class TemporalConfigError extends Error {
  override readonly name = 'TemporalConfigError';
}

/** What a caller sets itself; each field wins over the environment configuration. */
export interface TargetOverrides {
  readonly address?: string;
  readonly namespace?: string;
}

/** Resolves the Temporal target from the environment configuration (`env`, default this process's). */
export function temporalTarget(
  overrides: TargetOverrides = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): TemporalTarget {
  // An empty variable is an unset one (a container's `TEMPORAL_API_KEY=` must not turn TLS on).
  const vars = Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
    ),
  );
  let loaded;
  try {
    loaded = loadClientConnectConfig({ overrideEnvVars: vars });
  } catch (error) {
    throw new TemporalConfigError(
      `cannot read Temporal's connection settings (${(error as Error).message}); check ` +
        `TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE${vars.TEMPORAL_CONFIG_FILE ? ` (${vars.TEMPORAL_CONFIG_FILE})` : ''} ` +
        'and the TEMPORAL_TLS_* paths',
    );
  }
  const options = loaded.connectionOptions;
  const address = overrides.address ?? options.address ?? DEFAULT_TEMPORAL_ADDRESS;
  const tls = options.tls ?? undefined;
  const apiKey = typeof options.apiKey === 'string' && options.apiKey ? options.apiKey : undefined;
  const metadata = options.metadata && Object.keys(options.metadata).length ? options.metadata : undefined;
  return {
    address,
    namespace: overrides.namespace ?? loaded.namespace ?? DEFAULT_TEMPORAL_NAMESPACE,
    connection: {
      address,
      ...(tls !== undefined ? { tls } : {}),
      ...(apiKey ? { apiKey } : {}),
      ...(metadata ? { metadata } : {}),
    },
    security: describeSecurity(tls, apiKey),
  };
}

function describeSecurity(tls: ConnectionOptions['tls'], apiKey: string | undefined): string {
  const parts: string[] = [];
  if (tls) parts.push(typeof tls === 'object' && tls.clientCertPair ? 'TLS, client certificate' : 'TLS');
  if (apiKey) parts.push('API key');
  return parts.length ? parts.join(', ') : 'plaintext';
}

/** The sentence an unreachable-Temporal error ends with: what to set. */
export const CONNECT_HINT =
  'Run `mockworld stack up` for the local stack, or point TEMPORAL_ADDRESS (or a profile of ' +
  'TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE) at your cluster, with TEMPORAL_API_KEY or TEMPORAL_TLS_CLIENT_CERT_PATH/' +
  'TEMPORAL_TLS_CLIENT_KEY_PATH where it needs them (docs/cluster.md "Run on Temporal Cloud").';
