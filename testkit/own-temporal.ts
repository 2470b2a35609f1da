import path from 'node:path';
import { Connection } from '@temporalio/client';
import { registerSearchAttributes } from '../deploy/search-attributes.js';
import { startDevServer, type DevServer, type DevServerOptions } from '../deploy/temporal-dev-server.js';
import { freePort } from './ports.js';

/**
 * A Temporal dev server a test owns (its own port, its state in the test's folder), for tests
 * that kill it: the shared server of the integration project is never touched.
 */
export interface OwnTemporal {
  readonly address: string;
  /** SIGKILLs the server, as a crash would, and starts it again on the same port and state. */
  crashAndRestart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a dev server with its state in `dir` and mockworld's search attributes registered, on
 * loopback, or for the hosts of a test host network (testkit/hosts.ts) at `serverAddress`. That
 * one listens on every address of the caller's namespace: the dev server (CLI 1.x) binds its
 * internal services to `--ip` but dials them on 127.0.0.1, so any other single address breaks it.
 */
export async function startOwnTemporal(
  cli: string,
  dir: string,
  serverAddress?: string,
): Promise<OwnTemporal> {
  const options: DevServerOptions = {
    cli,
    port: await freePort(),
    ...(serverAddress ? { ip: '0.0.0.0' } : {}),
    dbFile: path.join(dir, 'temporal.db'),
    logFile: path.join(dir, 'temporal.log'),
  };
  let server: DevServer = await startDevServer(options);
  const address = serverAddress ? `${serverAddress}:${options.port}` : server.address;
  const connection = await Connection.connect({ address });
  await registerSearchAttributes(connection, 'default');
  await connection.close();
  return {
    address,
    async crashAndRestart() {
      const exited = new Promise((resolve) => server.process.once('exit', resolve));
      server.process.kill('SIGKILL');
      await exited;
      server = await startDevServer(options);
    },
    stop: () => server.stop(),
  };
}
