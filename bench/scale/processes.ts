import { readFileSync, statSync } from 'node:fs';
import { childrenOf } from '../../testkit/chaos/components.js';
import { processCpuMs } from '../measure/cpu.js';

/** A /proc status field in kB (VmHWM: peak resident set), 0 when the process is gone. */
function statusKb(pid: number, field: string): number {
  try {
    const found = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return found ? Number(found[1]) : 0;
  } catch {
    return 0;
  }
}

/** utime+stime+cutime+cstime in ms: a process with the CPU of its children that have exited. */
function treeCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU of a PostgreSQL server in ms: the postmaster, its backends that exited (reaped into its
 * cutime) and those alive now. Differences of two readings are what a run cost the server.
 */
export async function postgresCpuMs(postmaster: number): Promise<number> {
  const children = await childrenOf(postmaster);
  return treeCpuMs(postmaster) + children.reduce((n, child) => n + processCpuMs(child), 0);
}

/** Peak resident set in MiB of a process; for PostgreSQL, its largest process (shared buffers count in each). */
export async function peakRssMiB(pid: number, withChildren = false): Promise<number> {
  const pids = withChildren ? [pid, ...(await childrenOf(pid))] : [pid];
  return Math.max(...pids.map((p) => statusKb(p, 'VmHWM'))) / 1024;
}

/** Bytes of the files whose names start with `base` (SQLite: the db, -wal and -shm files). */
export function filesBytes(base: string): number {
  let total = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      total += statSync(`${base}${suffix}`).size;
    } catch {
      // not there
    }
  }
  return total;
}
