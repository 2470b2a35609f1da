import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { registerSearchAttributes } from '../deploy/search-attributes.js';
import { ensureTemporalCli } from '../deploy/temporal-cli.js';
import { startDevServer, type DevServer } from '../deploy/temporal-dev-server.js';
import { freePort } from './ports.js';

/**
 * What every benchmark process sets up first: a temp dir (its MOCKWORLD_HOME), a nonce for names,
 * a timestamped log, and a cleanup stack that stops what the bench started, in reverse order, at the
 * end, on SIGINT/SIGTERM and on a crash outside the bench's own try.
 */
export interface BenchRun {
  /** performance.now() when the run started. */
  readonly startedAt: number;
  readonly dir: string;
  readonly nonce: string;
  /** Logs to stderr with the seconds since the start (stdout is for the tables). */
  log(line: string): void;
  /** Registers a cleanup; calling the returned function runs it now (and not again at the end). */
  onCleanup(name: string, run: () => Promise<unknown>): () => Promise<void>;
  /** Runs every registered cleanup once, newest first; a failing one is reported, the rest still run. */
  cleanupAll(): Promise<void>;
}

export async function startBenchRun(name: string): Promise<BenchRun> {
  const startedAt = performance.now();
  const dir = await mkdtemp(path.join(os.tmpdir(), `mockworld-bench-${name}-`));
  process.env.MOCKWORLD_HOME = dir;
  // The bench writes the data files its specs name here: a data root of the workers it starts.
  process.env.MOCKWORLD_DATA_ROOTS = [process.env.MOCKWORLD_DATA_ROOTS, dir]
    .filter(Boolean)
    .join(path.delimiter);

  const cleanups: Array<{ name: string; run: () => Promise<unknown> }> = [];
  const onCleanup = (what: string, run: () => Promise<unknown>) => {
    const entry = { name: what, run };
    cleanups.push(entry);
    return async () => {
      const at = cleanups.indexOf(entry);
      if (at >= 0) cleanups.splice(at, 1);
      await run();
    };
  };
  let cleaning: Promise<void> | undefined;
  const cleanupAll = () =>
    (cleaning ??= (async () => {
      while (cleanups.length) {
        const entry = cleanups.pop()!;
        try {
          await entry.run();
        } catch (error) {
          console.error(`cleanup of ${entry.name} failed: ${(error as Error).message}`);
        }
      }
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping everything the bench started`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
  process.on('uncaughtException', (error) => {
    console.error(error);
    void cleanupAll().finally(() => process.exit(1));
  });
  onCleanup('temp dir', () => rm(dir, { recursive: true, force: true }));
  return {
    startedAt,
    dir,
    nonce: randomBytes(3).toString('hex'),
    log: (line) => console.error(`[${((performance.now() - startedAt) / 1000).toFixed(1)}s] ${line}`),
    onCleanup,
    cleanupAll,
  };
}

/** A Temporal dev server of the bench's own (db file in its temp dir) and a client on it. */
export interface BenchTemporal {
  readonly server: DevServer;
  readonly connection: Connection;
  readonly client: Client;
  /** Aborted at cleanup, so client calls still waiting (a workflow result) give up. */
  readonly pending: AbortController;
}

/** Starts the dev server (search attributes registered) and a client; both stop at cleanup. */
export async function startBenchTemporal(run: BenchRun): Promise<BenchTemporal> {
  const server = await startDevServer({
    cli: await ensureTemporalCli(run.log),
    port: await freePort(),
    dbFile: path.join(run.dir, 'temporal.db'),
    logFile: path.join(run.dir, 'temporal.log'),
  });
  run.onCleanup('temporal dev server', () => server.stop());
  const connection = await Connection.connect({ address: server.address });
  run.onCleanup('client connection', () => connection.close());
  await registerSearchAttributes(connection, 'default');
  const pending = new AbortController();
  setMaxListeners(0, pending.signal);
  run.onCleanup('pending client calls', async () => pending.abort(new Error('bench stopping')));
  return { server, connection, client: new Client({ connection }), pending };
}

/**
 * The workflow's result, or a failure after `timeoutMs` (a hang): then its pending activities and
 * their last failures are printed (what it was waiting for) and the run is terminated, so a
 * failed bench leaves nothing running. Aborted with the bench's other client calls at cleanup.
 */
export async function resultWithin<T>(
  temporal: Pick<BenchTemporal, 'connection' | 'pending'>,
  handle: WorkflowHandle,
  timeoutMs: number,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Temporal run ${handle.workflowId} exceeded ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    return (await Promise.race([
      temporal.connection.withAbortSignal(temporal.pending.signal, () => handle.result()),
      hang,
    ])) as T;
  } catch (error) {
    const pending = await handle
      .describe()
      .then((d) => d.raw.pendingActivities ?? [])
      .catch(() => []);
    for (const a of pending)
      console.error(
        `pending ${a.activityType?.name}: attempt ${a.attempt}, last failure: ${a.lastFailure?.message ?? 'none'}`,
      );
    await handle.terminate('bench timeout').catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
