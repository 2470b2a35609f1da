import { Client, Connection } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { loadEnvironment } from '../schemas/environment.js';
import { payloadCodecFromEnvironment, withPayloadCodec } from '../services/codec/payload-codec.js';

/** Where to reach Temporal; each field defaults to the environment (TEMPORAL_ADDRESS, ...). */
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
  const address = options.address ?? env.TEMPORAL_ADDRESS;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 5_000 });
  } catch (error) {
    throw new Error(
      `Temporal is not reachable at ${address} (${(error as Error).message}). ` +
        'Run `mockworld stack up`, or set TEMPORAL_ADDRESS to your cluster frontend.',
    );
  }
  const codec = options.payloadCodec === undefined ? payloadCodecFromEnvironment(env) : options.payloadCodec;
  return new Client({
    connection,
    namespace: options.namespace ?? env.TEMPORAL_NAMESPACE,
    dataConverter: withPayloadCodec(undefined, codec ?? undefined),
  });
}
