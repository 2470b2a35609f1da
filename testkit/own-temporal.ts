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

/** Starts a dev server with its state in `dir` and mockworld's search attributes registered. */
export async function startOwnTemporal(cli: string, dir: string): Promise<OwnTemporal> {
  const options: DevServerOptions = {
    cli,
    port: await freePort(),
    dbFile: path.join(dir, 'temporal.db'),
    logFile: path.join(dir, 'temporal.log'),
  };
  let server: DevServer = await startDevServer(options);
  const connection = await Connection.connect({ address: server.address });
  await registerSearchAttributes(connection, 'default');
  await connection.close();
  return {
    address: server.address,
    async crashAndRestart() {
      const exited = new Promise((resolve) => server.process.once('exit', resolve));
      server.process.kill('SIGKILL');
      await exited;
      server = await startDevServer(options);
    },
    stop: () => server.stop(),
  };
}
