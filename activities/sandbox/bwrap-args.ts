import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { SandboxCaps } from '../../schemas/reasoning-sandbox.js';
import type { SandboxInstall } from './install.js';

/** Paths inside the sandbox. */
export const SANDBOX_VENV = '/sandbox/venv';
export const SANDBOX_BOOTSTRAP = '/sandbox/bootstrap';
export const SCRATCH = '/scratch';
/** The file descriptor bubblewrap reads the seccomp filter from. */
export const SECCOMP_FD = 3;

/** A top-level system folder of the host beside /usr: a link into /usr (merged /usr) or a folder. */
export interface SystemDir {
  readonly name: string;
  readonly linkTarget: string | null;
}

/** /bin, /lib, /lib64, /sbin as this host has them (Debian 12 links them into /usr). */
export function hostSystemDirs(): SystemDir[] {
  return ['bin', 'lib', 'lib64', 'sbin'].flatMap((name): SystemDir[] => {
    const full = `/${name}`;
    try {
      const stat = lstatSync(full);
      if (stat.isSymbolicLink()) return [{ name, linkTarget: readlinkSync(full) }];
      return stat.isDirectory() ? [{ name, linkTarget: null }] : [];
    } catch {
      return [];
    }
  });
}

/** How the sandbox drops root, when the worker is root. */
export interface SandboxIdentity {
  /**
   * The uid (and gid) the program runs as: a fresh one per run when the worker is root, so the
   * process cap (RLIMIT_NPROC, counted per uid) counts this run's processes alone, and root's
   * exemption from it does not apply. Null when the worker is not root: bubblewrap then runs
   * unprivileged in a user namespace of its own, where the cap is counted per namespace.
   */
  readonly uid: number | null;
}

/**
 * The bubblewrap command line of one run. What the program sees: /usr and the interpreter's prefix
 * read-only, the venv and the bootstrap read-only under /sandbox, a fresh /proc of its own PID
 * namespace, a minimal /dev, a size-capped tmpfs at /scratch (also /tmp) as its only writable
 * place, and nothing else of the host: no /etc, /home, /root, repository or worker files. It has
 * no network (a namespace with only its own loopback), no System V IPC or hostname of the host,
 * a cleared environment and its own session (no terminal signals to the worker), and a seccomp
 * filter that refuses namespaces, mounts, ptrace, the key store, BPF, perf events and kernel
 * modules. It dies with the worker.
 */
export function bwrapArgs(
  install: SandboxInstall,
  caps: SandboxCaps,
  identity: SandboxIdentity,
  systemDirs: readonly SystemDir[] = hostSystemDirs(),
): string[] {
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'sandbox',
  ];
  if (identity.uid === null) {
    // No user namespace of the program's own inside ours (the seccomp filter refuses it as well).
    args.push('--unshare-user', '--disable-userns');
  } else {
    // Root: bubblewrap keeps only what setpriv needs to drop to the run's uid, then nothing.
    args.push(
      '--cap-drop',
      'ALL',
      '--cap-add',
      'CAP_SETUID',
      '--cap-add',
      'CAP_SETGID',
      '--cap-add',
      'CAP_SETPCAP',
    );
  }
  args.push('--clearenv');
  for (const [name, value] of Object.entries(sandboxEnvironment())) args.push('--setenv', name, value);
  args.push('--ro-bind', '/usr', '/usr');
  for (const dir of systemDirs) {
    if (dir.linkTarget !== null) args.push('--symlink', dir.linkTarget, `/${dir.name}`);
    else args.push('--ro-bind', `/${dir.name}`, `/${dir.name}`);
  }
  const prefix = path.resolve(install.basePrefix);
  if (!isInside(prefix, '/usr')) {
    // bubblewrap makes missing parents 0700, which the program's uid could not pass through.
    for (const dir of ancestors(prefix)) args.push('--perms', '0755', '--dir', dir);
    args.push('--ro-bind', prefix, prefix);
  }
  args.push(
    '--perms',
    '0755',
    '--dir',
    '/sandbox',
    '--ro-bind',
    install.venv,
    SANDBOX_VENV,
    '--ro-bind',
    install.bootstrapDir,
    SANDBOX_BOOTSTRAP,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--perms',
    '1777',
    '--size',
    String(caps.scratchMiB * 1024 * 1024),
    '--tmpfs',
    SCRATCH,
    '--symlink',
    SCRATCH,
    '/tmp',
    '--chdir',
    SCRATCH,
    '--remount-ro',
    '/',
    // The syscall filter (deploy/sandbox-seccomp.py), read from the file the worker opens as fd 3.
    '--seccomp',
    String(SECCOMP_FD),
    '--',
  );
  if (identity.uid !== null) {
    const id = String(identity.uid);
    args.push(
      '/usr/bin/setpriv',
      `--reuid=${id}`,
      `--regid=${id}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
    );
  }
  args.push(`${SANDBOX_VENV}/bin/python`, '-I', '-B', `${SANDBOX_BOOTSTRAP}/bootstrap.py`);
  return args;
}

/**
 * The program's whole environment. One thread per numeric library, so a numpy call does not spend
 * the process cap on a thread pool sized by the host's cores.
 */
export function sandboxEnvironment(): Record<string, string> {
  return {
    PATH: `${SANDBOX_VENV}/bin:/usr/bin:/bin`,
    HOME: SCRATCH,
    TMPDIR: SCRATCH,
    LANG: 'C.UTF-8',
    OPENBLAS_NUM_THREADS: '1',
    OMP_NUM_THREADS: '1',
    MKL_NUM_THREADS: '1',
    NUMEXPR_NUM_THREADS: '1',
    MPLBACKEND: 'Agg',
  };
}

/** `/a/b/c` -> `/a`, `/a/b`. */
function ancestors(dir: string): string[] {
  const parts = dir.split('/').filter(Boolean);
  return parts.slice(0, -1).map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
