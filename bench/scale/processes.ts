import { readFileSync, readdirSync, statSync } from 'node:fs';
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

/** Children of `pid` (PostgreSQL's backends and helpers), from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // gone
    }
  }
  return out;
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
export function postgresCpuMs(postmaster: number): number {
  return treeCpuMs(postmaster) + childrenOf(postmaster).reduce((n, child) => n + processCpuMs(child), 0);
}

/** Peak resident set in MiB of a process; for PostgreSQL, its largest process (shared buffers count in each). */
export function peakRssMiB(pid: number, withChildren = false): number {
  const pids = withChildren ? [pid, ...childrenOf(pid)] : [pid];
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
