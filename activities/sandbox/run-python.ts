import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { closeSync, openSync } from 'node:fs';
import { randomBytes, randomInt } from 'node:crypto';
import { constants as osConstants } from 'node:os';
import {
  PythonRunRequestSchema,
  type PythonRunRequest,
  type PythonRunResult,
  type SandboxCap,
  type SandboxCaps,
} from '../../schemas/reasoning-sandbox.js';
import { activityCancellation } from '../cancellation.js';
import { bwrapArgs } from './bwrap-args.js';
import { SandboxRequestError, SandboxUnavailableError } from './errors.js';
import { createRunCgroup, type CgroupSupport, type RunCgroup, type RunUsage } from './cgroup.js';
import { sandboxHost, type SandboxHost } from './host.js';
import type { SandboxInstall } from './install.js';

/** Exit code of bootstrap.py for an uncaught MemoryError (same value there). */
export const MEMORY_EXIT_CODE = 86;

/**
 * Uids a root worker gives its runs, one fresh uid per run: far above the ones distributions hand
 * out (and above 65534, nobody), so no host account or file is the program's.
 */
const UID_RANGE = [1_000_000, 2_000_000_000] as const;

/** What a run needs from the worker. */
export interface RunDependencies {
  readonly install: SandboxInstall;
  /**
   * Cancels the run: it is killed (or leaves the queue), and the call rejects with the signal's
   * reason. Default: the running activity's cancellation.
   */
  readonly signal?: AbortSignal;
  /** The worker's slots and cgroups; default: this process's (host.ts). */
  readonly host?: SandboxHost;
}

/** Tasks of a run that are not the program's: bubblewrap's two processes and the entering shell. */
const SANDBOX_OVERHEAD_PROCESSES = 3;

/**
 * Runs one Python program in the sandbox and says how it ended. Whatever the program does — loop,
 * fork, allocate, print without end, open files or sockets it may not — it comes back as a
 * {@link PythonRunResult}, never as a thrown error: a hostile program is the policy's problem, not
 * the worker's. Throws only {@link SandboxRequestError} for a request over its limits and
 * {@link SandboxUnavailableError} when the sandbox itself did not come up.
 */
export async function runPython(given: RunDependencies, data: PythonRunRequest): Promise<PythonRunResult> {
  // Inside an activity a run is killed when the activity is cancelled, whatever signal it was given.
  const deps = { ...given, signal: given.signal ?? activityCancellation() };
  const parsed = PythonRunRequestSchema.safeParse(data);
  if (!parsed.success) {
    throw new SandboxRequestError(
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
  const { code, stdin, caps } = parsed.data;
  const root = process.getuid?.() === 0;
  const args = bwrapArgs(deps.install, caps, { uid: root ? randomInt(...UID_RANGE) : null });
  const nonce = randomBytes(16).toString('hex');
  const request = JSON.stringify({
    code,
    stdin,
    nonce,
    caps: {
      cpuSeconds: caps.cpuSeconds,
      memoryBytes: caps.memoryMiB * 1024 * 1024,
      processes: caps.processes,
      fileBytes: caps.scratchMiB * 1024 * 1024,
      openFiles: 256,
    },
  });
  const host = deps.host ?? sandboxHost();
  const release = await host.slots.acquire(deps.signal);
  try {
    const cgroup = host.cgroups && runCgroup(host.cgroups, nonce, caps);
    try {
      return await supervise(deps, args, request, nonce, caps, cgroup);
    } finally {
      await cgroup?.remove();
    }
  } finally {
    release();
  }
}

/** The run's cgroup with its whole-run caps. */
function runCgroup(support: CgroupSupport, nonce: string, caps: SandboxCaps): RunCgroup {
  try {
    return createRunCgroup(support, `run-${nonce.slice(0, 16)}`, {
      memoryBytes: caps.runMemoryMiB * 1024 * 1024,
      processes: caps.processes + SANDBOX_OVERHEAD_PROCESSES,
      cpus: caps.runCpus,
    });
  } catch (error) {
    throw new SandboxUnavailableError(
      `cannot make the run's cgroup: ${error instanceof Error ? error.message : error} ` +
        '(MOCKWORLD_SANDBOX_CGROUP=off runs without one)',
    );
  }
}

/** Opens the seccomp filter for the child; a missing one means the sandbox was not installed. */
function openFilter(file: string): number {
  try {
    return openSync(file, 'r');
  } catch (error) {
    throw new SandboxUnavailableError(
      `cannot read the seccomp filter ${file} (${(error as Error).message}); run deploy/sandbox-venv.sh`,
    );
  }
}

/**
 * The process to start: bubblewrap, or (with a cgroup) a shell that first moves itself into the
 * run's cgroup and then becomes bubblewrap, so every process of the run is born inside it.
 */
function sandboxCommand(bwrap: string, args: string[], cgroup: RunCgroup | null) {
  // bubblewrap reads its options from ARGS_FD, so its command line, the sandbox's /proc/1/cmdline,
  // names none of the host paths it binds: only the command, in the sandbox's own paths, stays.
  const commandAt = args.indexOf('--');
  const options = args.slice(0, commandAt);
  const argv = ['--args', String(ARGS_FD), ...args.slice(commandAt)];
  if (!cgroup) return { command: bwrap, argv0: 'bwrap', argv, options };
  // Run from its folder, so that its name on the command line holds no host path either.
  const enter =
    'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; ' +
    'cd "${1%/*}" || exit 125; bwrap="./${1##*/}"; shift; exec "$bwrap" "$@"';
  return {
    command: '/bin/sh',
    argv: ['-c', enter, 'sh', ...cgroup.procsFiles, '--', bwrap, ...argv],
    options,
  };
}

/** The descriptor bubblewrap reads its arguments from (after SECCOMP_FD, 3). */
const ARGS_FD = 4;

/** Runs bwrap with `args`, feeds it `request`, enforces the wall-time and output caps. */
function supervise(
  deps: RunDependencies,
  args: string[],
  request: string,
  nonce: string,
  caps: SandboxCaps,
  cgroup: RunCgroup | null,
): Promise<PythonRunResult> {
  const started = performance.now();
  // An empty environment: bubblewrap is the sandbox's PID 1, and its /proc/1/environ must hold
  // none of the worker's variables (keys, database URLs).
  const { command, argv0, argv, options } = sandboxCommand(deps.install.bwrap, args, cgroup);
  const filter = openFilter(deps.install.seccomp);
  // stdio[3] is SECCOMP_FD: bubblewrap reads the filter from it; stdio[4], ARGS_FD, its arguments.
  const child = spawn(command, argv, { argv0, env: {}, stdio: ['pipe', 'pipe', 'pipe', filter, 'pipe'] });
  closeSync(filter);
  const argsPipe = child.stdio[ARGS_FD] as Writable;
  argsPipe.on('error', () => undefined); // a bubblewrap that failed to start reads nothing
  argsPipe.end(options.map((option) => `${option}\0`).join(''));
  const stdout = child.stdout!;
  const stderr = child.stderr!;
  const stdin = child.stdin!;
  const output = new CappedOutput(caps.outputBytes, nonce);
  // Why the worker killed the run: a cap, a cancellation, or a sandbox that came up wrong.
  let killedFor: SandboxCap | 'cancelled' | 'broken' | null = null;
  const kill = (reason: NonNullable<typeof killedFor>) => {
    killedFor ??= reason;
    // SIGKILL to bubblewrap: its sandbox processes die with it (--die-with-parent, PID namespace).
    child.kill('SIGKILL');
  };
  const wallTimer = setTimeout(() => kill('wall_time'), caps.wallSeconds * 1000);
  const onAbort = () => kill('cancelled');
  deps.signal?.addEventListener('abort', onAbort, { once: true });

  const onData = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    const state = output.add(stream, chunk);
    if (state !== 'ok') kill(state === 'over' ? 'output' : 'broken');
  };
  stdout.on('data', onData('stdout'));
  stderr.on('data', onData('stderr'));
  // The program may exit without reading its request; a closed pipe is then no error of ours.
  stdin.on('error', () => undefined);
  stdin.end(request);

  return new Promise((resolve, reject) => {
    child.on('error', (error) => {
      clearTimeout(wallTimer);
      deps.signal?.removeEventListener('abort', onAbort);
      reject(new SandboxUnavailableError(`cannot start ${deps.install.bwrap}: ${error.message}`));
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(wallTimer);
      deps.signal?.removeEventListener('abort', onAbort);
      if (killedFor === 'cancelled') return reject(deps.signal?.reason ?? new Error('sandbox run cancelled'));
      if (killedFor === 'broken' || (!output.started && killedFor !== 'wall_time')) {
        // bubblewrap or the interpreter failed before the program could run: the sandbox is broken.
        const said = output.raw().trim().slice(-2_000);
        return reject(
          new SandboxUnavailableError(
            `the sandbox exited with ${exitCode ?? signal} before the program ran${said ? `: ${said}` : ''}`,
          ),
        );
      }
      resolve(
        describeEnd({
          exitCode,
          killedFor: killedFor as SandboxCap | null,
          caps,
          stdout: output.text('stdout'),
          stderr: output.text('stderr'),
          truncated: output.truncated,
          durationMs: performance.now() - started,
          usage: cgroup?.usage() ?? null,
        }),
      );
    });
  });
}

/**
 * stdout and stderr of a run, capped together. The first stdout line must be the nonce: until it
 * arrives nothing the program printed counts (it has not run yet).
 */
class CappedOutput {
  private readonly chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  private bytes = 0;
  private pending = Buffer.alloc(0);
  started = false;
  truncated = false;

  constructor(
    private readonly cap: number,
    private readonly nonce: string,
  ) {}

  /**
   * Adds a chunk: `over` once the cap is passed (what fits is kept), `broken` when stdout does not
   * start with the nonce line (something other than bootstrap.py spoke first).
   */
  add(stream: 'stdout' | 'stderr', chunk: Buffer): 'ok' | 'over' | 'broken' {
    if (stream === 'stdout' && !this.started) {
      this.pending = Buffer.concat([this.pending, chunk]);
      const newline = this.pending.indexOf(10);
      if (newline < 0) return this.pending.length <= this.nonce.length ? 'ok' : 'broken';
      if (this.pending.subarray(0, newline).toString() !== this.nonce) return 'broken';
      this.started = true;
      chunk = this.pending.subarray(newline + 1);
      this.pending = Buffer.alloc(0);
    }
    const room = this.cap - this.bytes;
    if (chunk.length > room) {
      this.chunks[stream].push(chunk.subarray(0, Math.max(room, 0)));
      this.bytes = this.cap;
      this.truncated = true;
      return 'over';
    }
    this.chunks[stream].push(chunk);
    this.bytes += chunk.length;
    return 'ok';
  }

  text(stream: 'stdout' | 'stderr'): string {
    return Buffer.concat(this.chunks[stream]).toString('utf8');
  }

  /** Everything seen, nonce or not: what a broken sandbox printed. */
  raw(): string {
    return `${this.pending.toString('utf8')}${this.text('stderr')}`;
  }
}

interface RunEnd {
  readonly exitCode: number | null;
  readonly killedFor: SandboxCap | null;
  readonly caps: SandboxCaps;
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly durationMs: number;
  /** How the run met its cgroup's whole-run caps; null without one. */
  readonly usage: RunUsage | null;
}

/**
 * Names how a run ended. bubblewrap exits with the program's code, or 128 + the signal that killed
 * it: SIGXCPU is the CPU cap (SIGKILL follows it a second later if the program ignores it).
 */
export function describeEnd(end: RunEnd): PythonRunResult {
  const signal = end.exitCode !== null && end.exitCode > 128 ? signalName(end.exitCode - 128) : null;
  let cap = end.killedFor;
  if (
    cap === null &&
    (signal === 'SIGXCPU' || (signal === 'SIGKILL' && end.durationMs >= end.caps.cpuSeconds * 1000))
  ) {
    cap = 'cpu_time';
  }
  if (cap === null && end.exitCode === MEMORY_EXIT_CODE) cap = 'memory';
  // The run's processes together reached runMemoryMiB: the kernel killed one, whatever the rest did.
  const wholeRun = cap === null && end.usage?.memoryCapped === true;
  if (wholeRun) cap = 'memory';
  const base = {
    exitCode: signal === null ? end.exitCode : null,
    signal,
    stdout: end.stdout,
    stderr: end.stderr,
    truncated: end.truncated,
    durationMs: Math.round(end.durationMs),
  };
  if (cap !== null) {
    const message = wholeRun
      ? `killed: the program's processes together needed more than the run's ${end.caps.runMemoryMiB} MiB of memory`
      : capMessage(cap, end.caps);
    return { ...base, outcome: 'killed', cap, message };
  }
  // A fork refused at the run's process cap is the program's error; say which cap refused it.
  const forks = end.usage?.processesCapped ? ` (a fork failed at its ${end.caps.processes}-process cap)` : '';
  if (end.exitCode === 0)
    return { ...base, outcome: 'ok', cap: null, message: `the program exited normally${forks}` };
  const how = signal ? `was killed by ${signal}` : `exited with code ${end.exitCode}`;
  return { ...base, outcome: 'error', cap: null, message: `the program ${how}${forks}` };
}

function capMessage(cap: SandboxCap, caps: SandboxCaps): string {
  switch (cap) {
    case 'cpu_time':
      return `killed: the program used more than its ${caps.cpuSeconds} s of CPU time`;
    case 'wall_time':
      return `killed: the program ran longer than its ${caps.wallSeconds} s of wall time`;
    case 'memory':
      return `killed: the program needed more than its ${caps.memoryMiB} MiB of memory`;
    case 'output':
      return `killed: the program printed more than its ${caps.outputBytes} bytes of output`;
  }
}

function signalName(number: number): string {
  const found = Object.entries(osConstants.signals).find(([, value]) => value === number);
  return found ? found[0] : `signal ${number}`;
}
