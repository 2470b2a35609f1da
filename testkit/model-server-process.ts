import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { stopChild } from '../deploy/processes.js';
import { startModelServer, type ModelServerStats, type Script } from './model-server.js';

/**
 * The scripted test model server in a child process of its own, so its CPU is counted apart from
 * the bench's. The child is an entry file that calls {@link serveModelServer} with its script: a
 * bench script re-running itself with `--serve` (bench/synthesis.ts), or an entry of its own
 * (bench/grpo/world-server.ts). The parent drives it by JSON lines on stdin/stdout
 * ({@link spawnModelServer}).
 */

/** The parent's handle on the child. */
export interface ModelServerProcess {
  readonly url: string;
  readonly pid: number;
  setLatency(ms: number): Promise<void>;
  reset(): Promise<void>;
  stats(): Promise<ModelServerStats>;
  stop(): Promise<void>;
}

/** Child side: serves `script`; answers `{id, cmd}` lines; exits when stdin closes. */
export async function serveModelServer(script: Script): Promise<void> {
  const server = await startModelServer({ script, log: false });
  console.log(JSON.stringify({ url: server.url }));
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const { id, cmd, ms } = JSON.parse(line) as { id: number; cmd: string; ms?: number };
    if (cmd === 'latency') server.setLatency(ms ?? 0);
    if (cmd === 'reset') server.resetStats();
    console.log(JSON.stringify({ id, stats: cmd === 'stats' ? server.stats : undefined }));
  });
  const stop = () => void server.close().then(() => process.exit(0));
  lines.on('close', stop);
  process.on('SIGTERM', stop);
}

/**
 * The entry of a bench whose model server is its own file in a child process: with `--serve` it
 * is that server, else it runs `main` (a failure sets the exit code).
 */
export async function serveOrRun(script: Script, main: () => Promise<void>): Promise<void> {
  if (process.argv.includes('--serve')) return serveModelServer(script);
  try {
    await main();
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  }
}

/** Parent side: starts `entry --serve` and waits until its server listens. */
export async function spawnModelServer(entry: string): Promise<ModelServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const waiting = new Map<number, (value: { stats?: ModelServerStats }) => void>();
  let nextId = 0;
  const url = await new Promise<string>((resolve, reject) => {
    lines.once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`model server exited with ${code} before listening`)));
  });
  lines.on('line', (line) => {
    const reply = JSON.parse(line) as { id: number; stats?: ModelServerStats };
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  const ask = (cmd: string, extra: Record<string, unknown> = {}) =>
    new Promise<{ stats?: ModelServerStats }>((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin!.write(`${JSON.stringify({ id, cmd, ...extra })}\n`);
    });
  return {
    url,
    pid: child.pid!,
    setLatency: async (ms) => void (await ask('latency', { ms })),
    reset: async () => void (await ask('reset')),
    stats: async () => (await ask('stats')).stats!,
    stop: () => stopChild(child, { graceMs: 5_000, ask: () => child.stdin!.end() }),
  };
}
