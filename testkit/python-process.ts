import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../deploy/paths.js';

/** A Python process of the trainer package (worker or policy server), run from the trainer venv. */
export interface PythonProcess {
  readonly child: ChildProcess;
  /** Resolves with the first stdout line matching `ready`. */
  readonly ready: Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Experiment tracking is on by default (TensorBoard under $MOCKWORLD_HOME/tensorboard): a test's
 * trainer with its own checkpoint directory writes it beside that directory, never under ~/.mockworld.
 */
function trackingBesideCheckpoints(env: Record<string, string>): Record<string, string> {
  const checkpoints = env.MOCKWORLD_CHECKPOINT_DIR;
  if (!checkpoints || env.MOCKWORLD_HOME || env.MOCKWORLD_TENSORBOARD_DIR) return {};
  return { MOCKWORLD_TENSORBOARD_DIR: path.join(path.dirname(checkpoints), 'tensorboard') };
}

/** Starts `python -m <module> ...args` from `.venv-trainer`, waiting for a line matching `ready`. */
export function startPython(
  module: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): PythonProcess {
  const child = spawn(path.join(REPO_ROOT, '.venv-trainer', 'bin', 'python'), ['-m', module, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...trackingBesideCheckpoints(env), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const readyLine = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      const line = log.split('\n').find((l) => ready.test(l));
      if (line) resolve(line);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`${module} exited with ${code} before it was ready:\n${log.slice(-3000)}`)),
    );
    child.once('error', (error) =>
      reject(
        new Error(
          `${module} could not be started (${error.message}); run \`bash deploy/trainer-venv.sh\` ` +
            '(npm test does) to create .venv-trainer',
        ),
      ),
    );
  });
  return {
    child,
    ready: readyLine,
    async kill(signal = 'SIGTERM') {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await gone;
    },
  };
}
