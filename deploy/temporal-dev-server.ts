import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { stopChild } from './processes.js';

/** Where and how to run a local Temporal dev server. */
export interface DevServerOptions {
  /** Path to the `temporal` binary. */
  readonly cli: string;
  /** Frontend gRPC port. */
  readonly port: number;
  /** Address the frontend listens on. Default 127.0.0.1 (loopback only). */
  readonly ip?: string;
  /** Web UI port; omitted = headless. */
  readonly uiPort?: number;
  /** Remote codec endpoint the UI decodes payloads through (encrypted payloads); omitted = none. */
  readonly uiCodecEndpoint?: string;
  /** SQLite file holding all server state; the same file after a restart = the same history. */
  readonly dbFile: string;
  /** Server log file (stdout and stderr). */
  readonly logFile: string;
  /** Detach so the server outlives this process (`mockworld stack up`). */
  readonly detached?: boolean;
}

/** A dev server process started by mockworld. */
export interface DevServer {
  readonly address: string;
  readonly process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after a grace period). */
  stop(): Promise<void>;
}

/**
 * The `temporal` arguments of a dev server on loopback, with its state in `dbFile` (SQLite, WAL),
 * warnings-only logs, and a web UI only when `uiPort` is given. One list for every dev server
 * mockworld starts.
 */
export function devServerArgs(
  options: Pick<DevServerOptions, 'port' | 'ip' | 'uiPort' | 'dbFile' | 'uiCodecEndpoint'>,
): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    options.ip ?? '127.0.0.1',
    '--port',
    String(options.port),
    '--db-filename',
    options.dbFile,
    '--log-level',
    'warn',
    // WAL without an fsync per commit: commits survive the server being killed (not a power
    // loss, which a dev server need not survive); measured in bench/grpo.ts, this takes the
    // server's CPU per GRPO rollout from 14 to 9 ms on 2 cores.
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
  ];
  if (options.uiPort) args.push('--ui-port', String(options.uiPort), '--ui-disable-news-fetch');
  else args.push('--headless');
  if (options.uiPort && options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  return args;
}

/** Starts `temporal server start-dev` and resolves once its frontend answers. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  mkdirSync(path.dirname(options.dbFile), { recursive: true });
  mkdirSync(path.dirname(options.logFile), { recursive: true });
  const args = devServerArgs(options);

  const log = openSync(options.logFile, 'a');
  const child = spawn(options.cli, args, {
    detached: options.detached ?? false,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  if (options.detached) child.unref();

  const address = `${options.ip ?? '127.0.0.1'}:${options.port}`;
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  await waitForFrontend(address, 60_000, () =>
    exited !== undefined
      ? `temporal server exited with code ${exited} before answering; see ${options.logFile}`
      : undefined,
  );
  return { address, process: child, stop: () => stopChild(child) };
}

/**
 * Polls the frontend until it answers a real RPC. `target`: its host:port, or the connection
 * options (TLS, API key) to reach it with. `failFast` lets the caller stop waiting as soon as it
 * knows the server died (it returns the message to throw).
 */
export async function waitForFrontend(
  target: string | ConnectionOptions,
  timeoutMs: number,
  failFast: () => string | undefined = () => undefined,
): Promise<void> {
  const options = typeof target === 'string' ? { address: target } : target;
  const address = options.address;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const reason = failFast();
    if (reason) throw new Error(reason);
    try {
      const connection = await Connection.connect({ ...options, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(
    `Temporal at ${address} did not answer within ${timeoutMs} ms: ${(lastError as Error)?.message}`,
  );
}
