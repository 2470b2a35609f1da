import { spawn, type ChildProcess } from 'node:child_process';
import { nodeEntryArgs, REPO_ROOT } from '../deploy/paths.js';

/** A CPU worker in its own OS process, so a test can SIGKILL it like a failing node. */
export interface WorkerProcess {
  readonly child: ChildProcess;
  /** SIGKILL, then wait for the process to be gone. */
  kill(): Promise<void>;
}

/**
 * Starts `workers/cpu-worker.ts` (or another worker entry of the repository, named without its
 * extension) as a separate process with the given environment; `launcher` runs it through a
 * command prefix, e.g. a test host's `ip netns exec <ns>` (testkit/hosts.ts).
 */
export function startWorkerProcess(
  env: Record<string, string>,
  entry = 'workers/cpu-worker',
  launcher: readonly string[] = [],
): WorkerProcess {
  const [command, ...args] = [...launcher, process.execPath, ...nodeEntryArgs(entry)];
  const child = spawn(command!, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  child.once('exit', (code, signal) => {
    if (code && signal !== 'SIGKILL') console.error(`worker process exited with ${code}:\n${stderr}`);
  });
  return {
    child,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    },
  };
}
