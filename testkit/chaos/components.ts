/**
 * The parts of the chaos harness's private stack that it kills and restarts: the Temporal dev
 * server (same db file after a crash), supervised processes (CPU workers, the Python trainer
 * worker, the model gateway); plus the checks around them (does PostgreSQL answer, which TCP ports
 * a process holds). PostgreSQL is the harness's own instance (testkit/postgres-instance.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, readdir, readlink } from 'node:fs/promises';
import os from 'node:os';
import pg from 'pg';
import { nodeEntryArgs, REPO_ROOT } from '../../deploy/paths.js';
import { stopChild } from '../../deploy/processes.js';
import { devServerArgs, waitForFrontend, type DevServerOptions } from '../../deploy/temporal-dev-server.js';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `pid@hostname`: the identity Temporal's TypeScript and Python SDKs give a worker by default. */
export function workerIdentity(pid: number): string {
  return `${pid}@${os.hostname()}`;
}

// ---------------------------------------------------------------------------------------------
// Temporal dev server

/**
 * The harness's own dev server: its db file in the harness's temp dir, crashed and restarted on the
 * same file. Started with the arguments of deploy/temporal-dev-server.ts (headless, warn logs),
 * plus one setting: task queues have a single partition, so a new worker's poller shows in
 * DescribeTaskQueue as soon as it polls (with the default four partitions it can sit unseen on
 * another partition for a minute, and the harness would misjudge when a restarted worker serves
 * again).
 */
export class TemporalServer {
  private child: ChildProcess | undefined;
  /** False between a crash and the restarted server answering. */
  up = false;

  constructor(readonly options: Omit<DevServerOptions, 'uiPort' | 'detached'>) {}

  get address(): string {
    return `127.0.0.1:${this.options.port}`;
  }

  async start(): Promise<void> {
    // The port of a SIGKILLed server is free at once, but a busy machine can be slow to hand it
    // back; a start that fails is retried a few times before it is an error.
    let lastError: unknown;
    for (let attempt = 1; attempt <= 5; attempt++) {
      try {
        await this.startOnce();
        this.up = true;
        return;
      } catch (error) {
        lastError = error;
        await this.crash();
        await sleep(1_000 * attempt);
      }
    }
    throw lastError;
  }

  private async startOnce(): Promise<void> {
    const { cli, port, dbFile, logFile } = this.options;
    const args = devServerArgs({ port, dbFile });
    for (const key of ['matching.numTaskqueueReadPartitions', 'matching.numTaskqueueWritePartitions']) {
      args.push('--dynamic-config-value', `${key}=1`);
    }
    const log = openSync(logFile, 'a');
    const child = spawn(cli, args, { stdio: ['ignore', log, log] });
    closeSync(log);
    this.child = child;
    let exited: number | null | undefined;
    child.once('exit', (code) => (exited = code));
    await waitForFrontend(this.address, 60_000, () =>
      exited !== undefined
        ? `temporal server exited with code ${exited} before answering; see ${logFile}`
        : undefined,
    );
  }

  /** SIGKILL (no shutdown), then wait until the process is gone. */
  async crash(): Promise<void> {
    const child = this.child;
    this.up = false;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }

  /** SIGTERM, SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const child = this.child;
    this.up = false;
    if (child) await stopChild(child);
  }
}

// ---------------------------------------------------------------------------------------------
// Supervised processes

/** One start of a supervised process. */
export interface Started {
  readonly child: import('node:child_process').ChildProcess;
  /** Resolves when the process says it is ready (or at once); rejects if it exits first. */
  readonly ready: Promise<unknown>;
}

/** A life of a supervised process: when it started, when it exited and why. */
export interface ProcessLife {
  readonly pid: number;
  readonly startedAt: number;
  exitedAt?: number;
  /** 'killed' by the harness (a fault or the cleanup), else how it ended by itself. */
  exit?: 'killed' | { code: number | null; signal: string | null; stderrTail: string };
}

/**
 * A process the harness keeps alive like a node supervisor would: killed on purpose by a fault, it
 * is started again at once; exiting by itself (e.g. a worker started while Temporal was down), it
 * is recorded as an unplanned exit and started again after a second. With `tree`, a kill takes
 * every descendant with it, as a node failure would: torchrun's ranks (each in a session of its
 * own, out of reach of a process-group signal) and the evaluation worker's trial processes.
 */
export class Supervised {
  private current: Started | undefined;
  private stopping = false;
  private killing = false;
  readonly lives: ProcessLife[] = [];

  constructor(
    readonly name: string,
    private readonly launch: () => Started,
    private readonly log: (line: string) => void,
    private readonly options: { readonly tree?: boolean } = {},
  ) {}

  get pid(): number | undefined {
    const child = this.current?.child;
    return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  }

  /** Exits the harness did not cause. */
  get unplannedExits(): ProcessLife[] {
    return this.lives.filter((l) => l.exit && l.exit !== 'killed');
  }

  start(): Started {
    const started = this.launch();
    this.current = started;
    const life: ProcessLife = { pid: started.child.pid ?? -1, startedAt: Date.now() };
    this.lives.push(life);
    let stderr = '';
    started.child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2_000);
    });
    started.ready.catch(() => undefined);
    started.child.once('exit', (code, signal) => {
      life.exitedAt = Date.now();
      if (this.killing || this.stopping) {
        life.exit = 'killed';
        return;
      }
      life.exit = { code, signal, stderrTail: stderr };
      this.log(
        `${this.name} (pid ${life.pid}) exited by itself (code ${code}, signal ${signal}); restarting`,
      );
      setTimeout(() => {
        if (!this.stopping && this.current === started) this.start();
      }, 1_000);
    });
    return started;
  }

  /** SIGKILL, wait until it is gone, start a new one; returns the new start. */
  async killAndRestart(): Promise<{ killedPid: number | undefined; next: Started }> {
    const killedPid = await this.kill();
    return { killedPid, next: this.start() };
  }

  private async kill(): Promise<number | undefined> {
    const child = this.current?.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return undefined;
    this.killing = true;
    try {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      if (this.options.tree && child.pid !== undefined) await killTree(child.pid);
      else child.kill('SIGKILL');
      await gone;
    } finally {
      this.killing = false;
    }
    return child.pid;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.kill();
  }
}

// ---------------------------------------------------------------------------------------------
// Process trees (Linux /proc)

/** The child pids of `pid` (every thread's), empty when it is gone or off Linux. */
export async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const out = new Set<number>();
  for (const tid of tasks) {
    const text = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    for (const word of text.split(/\s+/)) if (word) out.add(Number(word));
  }
  return [...out];
}

/** Every descendant of `pid`, children before grandchildren. */
export async function descendantsOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  let level = await childrenOf(pid);
  while (level.length > 0) {
    out.push(...level);
    level = (await Promise.all(level.map(childrenOf))).flat();
  }
  return out;
}

/** The environment process `pid` was started with (readable for the harness's own processes). */
export async function environOf(pid: number): Promise<Record<string, string> | undefined> {
  const text = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  return Object.fromEntries(
    text
      .split('\0')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/**
 * SIGKILLs `pid` and every descendant: stopped first, so that it starts no new child between the
 * listing and the kill (torchrun restarting its ranks), then all at once, with the process group
 * `pid` leads if it leads one (started detached: what its children fork meanwhile is in it).
 */
export async function killTree(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGSTOP');
  } catch {
    return; // gone
  }
  const tree = await descendantsOf(pid);
  for (const target of [pid, -pid, ...tree]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // gone already (or no such group)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// TCP ports of a process (which connections, and so which answers, a killed process held)

async function socketInodes(pid: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  await Promise.all(
    fds.map(async (fd) => {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    }),
  );
  return inodes;
}

/** Local TCP ports of every socket process `pid` holds (Linux /proc; empty elsewhere). */
export async function tcpPortsOf(pid: number): Promise<number[]> {
  const inodes = await socketInodes(pid);
  if (inodes.size === 0) return [];
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue;
      const port = parseInt(fields[1]!.split(':')[1]!, 16);
      if (Number.isFinite(port)) ports.add(port);
    }
  }
  return [...ports];
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: the harness's own instance (testkit/postgres-instance.ts)

/** Opens and closes one connection; true when PostgreSQL accepts it. */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// Model gateway

/**
 * `mockworld gateway` in its own process on `port` (fixed, so that a restarted gateway serves the
 * URL the workers were given); `ready` resolves with its URL once it listens. A launch for
 * {@link Supervised}: the gateway is killed and started again by fault (f).
 */
export function launchModelGateway(
  env: Record<string, string>,
  port: number,
): Started & { readonly ready: Promise<string> } {
  const child = spawn(process.execPath, [...nodeEntryArgs('cli/main'), 'gateway', '--port', String(port)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4_000);
      const found = /model gateway listening on (http:\/\/\S+)/.exec(output);
      if (found) resolve(found[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`model gateway exited with ${code}:\n${output}`)));
  });
  return { child, ready };
}
