import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { MockworldPlugin } from '../workers/plugin.js';

/** A client and a real in-process worker (with the mockworld plugin) on a fresh task queue. */
export interface TestWorker {
  readonly client: Client;
  readonly worker: Worker;
  readonly taskQueue: string;
  /** Resolves when the worker has shut down. */
  readonly running: Promise<void>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Keeps test output readable: the SDK logs warnings and errors only. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    /* already installed by an earlier file in this process */
  }
}

/** Starts a worker through the plugin against a real Temporal server and database. */
export async function startTestWorker(address: string, databaseUrl: string): Promise<TestWorker> {
  quietRuntime();
  const taskQueue = `test-${randomBytes(4).toString('hex')}`;
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    plugins: [new MockworldPlugin({ databaseUrl })],
  });
  const running = worker.run();
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  return {
    client,
    worker,
    taskQueue,
    running,
    async close() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await nativeConnection.close();
      await connection.close();
    },
  };
}

/**
 * Polls `check` every `intervalMs` until it returns a truthy value or the time runs out (a safety
 * net, not a speed test).
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `condition not met within ${timeoutMs} ms${lastError ? `: ${(lastError as Error).message}` : ''}`,
  );
}

/**
 * A new namespace on the shared dev server, with none of mockworld's search attributes, usable
 * once the server's namespace cache has it: what a team's own Temporal gives a first worker.
 */
export async function freshNamespace(connection: Connection, prefix = 'mw-ns'): Promise<string> {
  const namespace = `${prefix}-${randomBytes(4).toString('hex')}`;
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  await eventually(() => connection.operatorService.listSearchAttributes({ namespace }).then(() => true));
  return namespace;
}
