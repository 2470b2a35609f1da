import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { Connection } from '@temporalio/client';
import { registerSearchAttributes } from '../../deploy/search-attributes.js';
import { ensureTemporalCli, ensureTemporalTestServer } from '../../deploy/temporal-cli.js';
import { startDevServer } from '../../deploy/temporal-dev-server.js';
import { freePort } from '../ports.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** host:port of the real Temporal dev server shared by the integration tests. */
    temporalAddress: string;
    /** Path to the temporal binary (tests that restart their own server use it). */
    temporalCli: string;
    /** Path to the time-skipping test server (testkit/time-skipping.ts). */
    temporalTestServer: string;
  }
}

/**
 * Starts one real Temporal dev server (the official CLI, SQLite file, headless) for the whole
 * test run, and installs the time-skipping test server for the files that use their own. PostgreSQL is the machine's own; each test file creates and drops its databases.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = (line: string) => console.log(`[setup] ${line}`);
  const cli = await ensureTemporalCli(log);
  project.provide('temporalTestServer', await ensureTemporalTestServer(log));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-temporal-'));
  const server = await startDevServer({
    cli,
    port: await freePort(),
    dbFile: path.join(dir, 'temporal.db'),
    logFile: path.join(dir, 'temporal.log'),
  });
  const connection = await Connection.connect({ address: server.address });
  await registerSearchAttributes(connection, 'default');
  await connection.close();
  project.provide('temporalAddress', server.address);
  project.provide('temporalCli', cli);
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
