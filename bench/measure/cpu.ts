import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of another process in ms (utime + stime from /proc; USER_HZ = 100 on Linux). */
export function processCpuMs(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return 0; // the process is gone
  }
}

/** utime + stime of a /proc stat line in ms; the fields are counted after the `(comm)` field, which may hold spaces. */
function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * CPU of this process's threads in ms, by kind: the JS main thread (activities, the SDK's
 * JavaScript, a plain loop), the workflow thread(s) (workflow code in the sandbox), the Temporal
 * core threads (Rust: gRPC, protobuf, state machines), and the rest (V8 GC and compiler, libuv).
 */
export function threadCpuMs(): Record<string, number> {
  const out: Record<string, number> = {};
  let tids: string[] = [];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const kind =
        tid === String(process.pid)
          ? 'main'
          : name.startsWith('workflow')
            ? 'workflow'
            : name.startsWith('tokio')
              ? 'core'
              : 'other';
      out[kind] = (out[kind] ?? 0) + statCpuMs(stat);
    } catch {
      // the thread ended
    }
  }
  return out;
}
