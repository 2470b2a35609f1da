/**
 * What bounds a worker's sandboxed runs together (issue 33): its slots (MOCKWORLD_SANDBOX_CONCURRENCY
 * runs at once, the rest queued) and, where the host allows, a cgroup per run. So a worker holds at
 * most `slots × runMemoryMiB` for its programs, however they fork and allocate.
 */
import os from 'node:os';
import { loadEnvironment } from '../../schemas/environment.js';
import { detectCgroups, sweepRunCgroups, type CgroupSupport } from './cgroup.js';
import { SandboxUnavailableError } from './errors.js';
import { RunSlots } from './run-slots.js';

export interface SandboxHost {
  readonly slots: RunSlots;
  /** Where runs get their cgroups; null: per-process caps only. */
  readonly cgroups: CgroupSupport | null;
}

/** Makes a host bound from its settings; `cgroup: required` without a writable cgroup throws. */
export function createSandboxHost(settings: {
  concurrency: number;
  cgroup: 'auto' | 'required' | 'off';
}): SandboxHost {
  const cgroups = settings.cgroup === 'off' ? null : detectCgroups();
  if (!cgroups && settings.cgroup === 'required') {
    throw new SandboxUnavailableError(
      'MOCKWORLD_SANDBOX_CGROUP=required, but this worker cannot make cgroups under /sys/fs/cgroup: ' +
        'run it as root, or delegate a cgroup v2 subtree with the memory, pids and cpu controllers to it',
    );
  }
  if (cgroups) sweepRunCgroups(cgroups);
  else if (settings.cgroup === 'auto') {
    console.warn(
      '[sandbox] no writable cgroup here: sandboxed runs are bounded per process only (a run may hold ' +
        'processes × memoryMiB); run the worker as root or delegate a cgroup v2 subtree for whole-run bounds',
    );
  }
  return { slots: new RunSlots(settings.concurrency), cgroups };
}

let shared: SandboxHost | undefined;

/** This worker process's bound, from MOCKWORLD_SANDBOX_CONCURRENCY and MOCKWORLD_SANDBOX_CGROUP. */
export function sandboxHost(): SandboxHost {
  if (!shared) {
    const env = loadEnvironment();
    shared = createSandboxHost({
      concurrency: env.MOCKWORLD_SANDBOX_CONCURRENCY ?? os.availableParallelism(),
      cgroup: env.MOCKWORLD_SANDBOX_CGROUP,
    });
  }
  return shared;
}
