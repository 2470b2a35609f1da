import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../deploy/paths.js';
import type { ReplayPlans } from './eval-replay.js';

const exec = promisify(execFile);
const PYTHON = path.join(REPO_ROOT, '.venv-eval', 'bin', 'python');

/** The Python evaluation worker (workers/evaluation) as a process of its own, from .venv-eval. */
export interface EvalWorkerProcess {
  readonly child: ChildProcess;
  /** Everything it printed so far (for failure messages). */
  log(): string;
  /**
   * Signals the worker (with `processGroup`: its whole process group, the trial processes it forked
   * included) and waits for the worker to exit.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `python -m mockworld_eval.worker` and waits until it polls its task queue. `processGroup`
 * starts it in a process group of its own (id: its PID), so that `kill` reaches the forkserver and
 * the trial processes too, as a node failure would.
 */
export async function startEvalWorker(
  env: Record<string, string>,
  options: { processGroup?: boolean } = {},
): Promise<EvalWorkerProcess> {
  const child = spawn(PYTHON, ['-m', 'mockworld_eval.worker'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup === true,
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('evaluation worker polling')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`evaluation worker exited with ${code}:\n${log.slice(-3000)}`)),
    );
    child.once('error', (error) =>
      reject(
        new Error(`cannot start ${PYTHON} (${error.message}): run bash deploy/eval-venv.sh (npm test does)`),
      ),
    );
  });
  return {
    child,
    log: () => log,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      if (options.processGroup && child.pid !== undefined) process.kill(-child.pid, signal);
      else child.kill(signal);
      await gone;
    },
  };
}

/** Ground-truth replay plans of `taskIds`, for trials 0..trials-1, from the worker's own loader. */
export async function replayPlans(
  benchmark: 'bfcl' | 'tau2',
  group: string,
  taskIds: readonly string[],
  trials = 1,
): Promise<ReplayPlans> {
  const { stdout } = await exec(
    PYTHON,
    ['-m', 'mockworld_eval.replay', '--trials', String(trials), benchmark, group, ...taskIds],
    { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as ReplayPlans;
}
