import { Client, Connection } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { loadEnvironment } from '../schemas/environment.js';
import { payloadCodecFromEnvironment, withPayloadCodec } from '../services/codec/payload-codec.js';
import { CONNECT_HINT, temporalTarget } from '../services/temporal/connection.js';

/**
 * Where to reach Temporal; each field defaults to Temporal's environment configuration
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, a profile of
 * TEMPORAL_CONFIG_FILE: services/temporal/connection.ts).
 */
export interface ConnectOptions {
  readonly address?: string;
  readonly namespace?: string;
  /**
   * Encrypts what the client sends and decrypts what it reads, as the workers do. Default:
   * AES-256-GCM when `MOCKWORLD_PAYLOAD_KEY` is set, else none; `null`: none.
   */
  readonly payloadCodec?: PayloadCodec | null;
}

/** A Temporal client, with an error that says what to do when the server is down. */
export async function connectClient(options: ConnectOptions = {}): Promise<Client> {
  const env = loadEnvironment();
  const target = temporalTarget({ address: options.address, namespace: options.namespace });
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...target.connection, connectTimeout: 5_000 });
  } catch (error) {
    throw new Error(
      `Temporal is not reachable at ${target.address} (${target.security}; ${(error as Error).message}). ${CONNECT_HINT}`,
    );
  }
  const codec = options.payloadCodec === undefined ? payloadCodecFromEnvironment(env) : options.payloadCodec;
  return new Client({
    connection,
    namespace: target.namespace,
    dataConverter: withPayloadCodec(undefined, codec ?? undefined),
  });
}
