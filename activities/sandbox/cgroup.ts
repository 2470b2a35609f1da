/**
 * A whole-run bound for sandboxed programs (issue 33): each run in a cgroup of its own, so its
 * processes together — children, threads, the pages of its scratch tmpfs — cannot hold more
 * memory, processes or CPU than the run's caps, however many of them it forks. The per-process
 * rlimits of bootstrap.py stay as a second line. cgroup v2 (one hierarchy) or v1 (memory, pids and
 * cpu controllers mounted apart), whichever the host writes; none writable (an unprivileged worker
 * without a delegated cgroup): runs are bounded per process only, and the worker says so once.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** The folder mockworld's runs live under, in every hierarchy. */
const PARENT = 'mockworld-sandbox';
const CPU_PERIOD_US = 100_000;

/** The limits of one run's cgroup. */
export interface RunLimits {
  readonly memoryBytes: number;
  readonly processes: number;
  /** CPUs the run may use at once (cpu quota over the period). */
  readonly cpus: number;
}

/** How a run's processes met their cgroup's limits. */
export interface RunUsage {
  /** The kernel's OOM killer killed a process of the run at the memory limit. */
  readonly memoryCapped: boolean;
  /** A fork failed at the process limit. */
  readonly processesCapped: boolean;
}

/** The cgroup hierarchies this host lets the worker write. */
export type CgroupSupport =
  | { readonly version: 2; readonly parent: string }
  | { readonly version: 1; readonly memory: string; readonly pids: string; readonly cpu: string };

const writable = (dir: string) => {
  try {
    mkdirSync(path.join(dir, PARENT), { recursive: true });
    return true;
  } catch {
    return false;
  }
};

/**
 * The hierarchies to put runs in, or null when the worker cannot make cgroups here. v2 needs the
 * memory, pids and cpu controllers enabled for mockworld's folder (done here when the worker may).
 */
export function detectCgroups(root = CGROUP_ROOT): CgroupSupport | null {
  const unified = path.join(root, 'cgroup.controllers');
  if (existsSync(unified)) {
    const available = readFileSync(unified, 'utf8').split(/\s+/);
    if (!['memory', 'pids', 'cpu'].every((c) => available.includes(c)) || !writable(root)) return null;
    try {
      writeFileSync(path.join(root, PARENT, 'cgroup.subtree_control'), '+memory +pids +cpu');
    } catch {
      return null;
    }
    return { version: 2, parent: path.join(root, PARENT) };
  }
  const v1 = {
    memory: path.join(root, 'memory'),
    pids: path.join(root, 'pids'),
    cpu: path.join(root, 'cpu'),
  };
  if (!Object.values(v1).every((dir) => existsSync(path.join(dir, 'cgroup.procs')) && writable(dir)))
    return null;
  return {
    version: 1,
    ...Object.fromEntries(Object.entries(v1).map(([k, d]) => [k, path.join(d, PARENT)])),
  } as CgroupSupport;
}

/** One run's cgroup: where its first process enters, and what its limits did. */
export interface RunCgroup {
  /** The `cgroup.procs` files the run's first process writes its pid to before it execs bubblewrap. */
  readonly procsFiles: readonly string[];
  /** How the run met its limits; read after it ended. */
  usage(): RunUsage;
  /** Removes the cgroup (its processes have died with bubblewrap's PID namespace). */
  remove(): Promise<void>;
}

const write = (dir: string, file: string, value: string | number) =>
  writeFileSync(path.join(dir, file), String(value));

/** Counters of a `key value` file (memory.events, pids.events, memory.oom_control); {} when absent. */
function counters(file: string): Record<string, number> {
  try {
    return Object.fromEntries(
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(/\s+/))
        .map(([key, value]) => [key, Number(value)]),
    );
  } catch {
    return {};
  }
}

/** Makes run `id`'s cgroup with `limits`. Throws when the host refuses a write. */
export function createRunCgroup(support: CgroupSupport, id: string, limits: RunLimits): RunCgroup {
  const quota = Math.max(1_000, Math.round(limits.cpus * CPU_PERIOD_US));
  if (support.version === 2) {
    const dir = path.join(support.parent, id);
    mkdirSync(dir);
    write(dir, 'memory.max', limits.memoryBytes);
    write(dir, 'memory.swap.max', 0);
    write(dir, 'pids.max', limits.processes);
    write(dir, 'cpu.max', `${quota} ${CPU_PERIOD_US}`);
    return {
      procsFiles: [path.join(dir, 'cgroup.procs')],
      usage: () => ({
        memoryCapped: (counters(path.join(dir, 'memory.events')).oom_kill ?? 0) > 0,
        processesCapped: (counters(path.join(dir, 'pids.events')).max ?? 0) > 0,
      }),
      remove: () => removeCgroup(dir),
    };
  }
  const dirs = {
    memory: path.join(support.memory, id),
    pids: path.join(support.pids, id),
    cpu: path.join(support.cpu, id),
  };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  write(dirs.memory, 'memory.limit_in_bytes', limits.memoryBytes);
  // With swap accounting, swap counts too; without it the host has none to give the run.
  if (existsSync(path.join(dirs.memory, 'memory.memsw.limit_in_bytes')))
    write(dirs.memory, 'memory.memsw.limit_in_bytes', limits.memoryBytes);
  write(dirs.pids, 'pids.max', limits.processes);
  write(dirs.cpu, 'cpu.cfs_period_us', CPU_PERIOD_US);
  write(dirs.cpu, 'cpu.cfs_quota_us', quota);
  return {
    procsFiles: Object.values(dirs).map((dir) => path.join(dir, 'cgroup.procs')),
    usage: () => ({
      memoryCapped: (counters(path.join(dirs.memory, 'memory.oom_control')).oom_kill ?? 0) > 0,
      processesCapped: (counters(path.join(dirs.pids, 'pids.events')).max ?? 0) > 0,
    }),
    remove: async () => {
      await Promise.all(Object.values(dirs).map(removeCgroup));
    },
  };
}

/**
 * rmdir of a run's cgroup; a process still in it (a straggler the PID namespace's end has not
 * reaped yet) is killed first.
 */
async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      for (const pid of readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await sleep(20);
    }
  }
}

/** Age past which an empty run cgroup is a killed worker's leftover, not a run about to enter it. */
const LEFTOVER_MS = 15 * 60_000;

/** Removes the empty run cgroups killed workers left behind (their runs ended with them). */
export function sweepRunCgroups(support: CgroupSupport, now = Date.now()): void {
  const parents = support.version === 2 ? [support.parent] : [support.memory, support.pids, support.cpu];
  for (const parent of parents) {
    for (const entry of readdirSync(parent, { withFileTypes: true })) {
      const dir = path.join(parent, entry.name);
      try {
        if (entry.isDirectory() && now - statSync(dir).mtimeMs > LEFTOVER_MS) rmdirSync(dir);
      } catch {
        // in use (another worker's run on this host): not a leftover
      }
    }
  }
}
