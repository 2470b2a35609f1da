import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A background process of the local stack, tracked by a pid file under MOCKWORLD_HOME. */
export interface ManagedProcess {
  readonly name: string;
  readonly pidFile: string;
  readonly logFile: string;
}

/** The pid and log files of a named stack component. */
export function managedProcess(home: string, name: string): ManagedProcess {
  return {
    name,
    pidFile: path.join(home, 'run', `${name}.pid`),
    logFile: path.join(home, 'logs', `${name}.log`),
  };
}

/** The pid of a component if its process is alive, else undefined (a stale pid file is ignored). */
export async function livePid(proc: ManagedProcess): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number((await readFile(proc.pidFile, 'utf8')).trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Starts a detached process that outlives the CLI, logging to the component's log file. */
export async function spawnDetached(
  proc: ManagedProcess,
  command: string,
  args: string[],
  cwd?: string,
): Promise<number> {
  mkdirSync(path.dirname(proc.pidFile), { recursive: true });
  mkdirSync(path.dirname(proc.logFile), { recursive: true });
  const log = openSync(proc.logFile, 'a');
  const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  if (!child.pid) throw new Error(`could not start ${proc.name}: ${command}`);
  await writeFile(proc.pidFile, String(child.pid));
  return child.pid;
}

/** Records the pid of a process started elsewhere (e.g. the dev server helper). */
export async function writePid(proc: ManagedProcess, pid: number): Promise<void> {
  mkdirSync(path.dirname(proc.pidFile), { recursive: true });
  await writeFile(proc.pidFile, String(pid));
}

/** Stops a component: SIGTERM to its process group, SIGKILL after the grace period. */
export async function stopManaged(proc: ManagedProcess, graceMs = 10_000): Promise<boolean> {
  const pid = await livePid(proc);
  await rm(proc.pidFile, { force: true });
  if (!pid) return false;
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig); // detached children lead their own process group
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* already gone */
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  signal('SIGKILL');
  return true;
}

/**
 * Stops a child process: `ask` it to go (SIGTERM by default), SIGKILL it if it is still there
 * after `graceMs`; resolves once it has exited. A process already gone resolves at once.
 */
export async function stopChild(
  child: ChildProcess,
  { graceMs = 10_000, ask = () => child.kill('SIGTERM') }: { graceMs?: number; ask?: () => void } = {},
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  ask();
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
