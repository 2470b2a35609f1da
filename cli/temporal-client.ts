import { Client, Connection } from '@temporalio/client';
import { loadEnvironment } from '../schemas/environment.js';
import { payloadCodecFromEnvironment, withPayloadCodec } from '../services/codec/payload-codec.js';

/** A Temporal client for the CLI, with an error that says what to do when the server is down. */
export async function connectClient(): Promise<Client> {
  const env = loadEnvironment();
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS, connectTimeout: 5_000 });
  } catch (error) {
    throw new Error(
      `Temporal is not reachable at ${env.TEMPORAL_ADDRESS} (${(error as Error).message}). ` +
        'Run `mockworld stack up`, or set TEMPORAL_ADDRESS to your cluster frontend.',
    );
  }
  // With MOCKWORLD_PAYLOAD_KEY set, the specs it sends and the results it reads are encrypted.
  return new Client({
    connection,
    namespace: env.TEMPORAL_NAMESPACE,
    dataConverter: withPayloadCodec(undefined, payloadCodecFromEnvironment(env)),
  });
}
