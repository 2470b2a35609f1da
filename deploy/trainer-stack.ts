import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { Environment } from '../schemas/environment.js';
import { REPO_ROOT } from './paths.js';
import { livePid, managedProcess, spawnDetached } from './processes.js';

/** The local trainer components, stopped by `mockworld stack down` with the rest. */
export const TRAINER_COMPONENTS = ['trainer-worker', 'policy-server'] as const;

/** Base URL of the local multi-run policy server. */
export function localPolicyUrl(env: Environment): string {
  return `http://127.0.0.1:${env.MOCKWORLD_POLICY_PORT}/v1`;
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).status < 500;
  } catch {
    return false;
  }
}

/**
 * Starts the Python trainer worker (the `gpu` task queue, on this machine's CPU or GPU) and a
 * multi-run policy server on MOCKWORLD_POLICY_PORT, for training specs on a laptop. Idempotent;
 * builds the trainer venv first (torch from the package index, once).
 */
export async function trainerUp(log: (line: string) => void, env: Environment): Promise<void> {
  const venv = spawnSync('bash', [path.join(REPO_ROOT, 'deploy', 'trainer-venv.sh')], { stdio: 'inherit' });
  if (venv.status !== 0)
    throw new Error('could not build the trainer venv (deploy/trainer-venv.sh); see above');
  const python = path.join(REPO_ROOT, '.venv-trainer', 'bin', 'python');
  const worker = managedProcess(env.MOCKWORLD_HOME, 'trainer-worker');
  if (await livePid(worker)) log(`trainer    already running (log ${worker.logFile})`);
  else {
    await spawnDetached(worker, python, ['-m', 'mockworld_trainer.worker'], REPO_ROOT);
    log(`trainer    worker started on the gpu task queue (log ${worker.logFile})`);
  }
  const url = localPolicyUrl(env);
  const server = managedProcess(env.MOCKWORLD_HOME, 'policy-server');
  if (await answers(`${url}/models`)) {
    log(`policy     ${url}  already running`);
    return;
  }
  await spawnDetached(
    server,
    python,
    [
      '-m',
      'mockworld_trainer.policy_server',
      '--any-run',
      '--base',
      'tiny',
      '--port',
      String(env.MOCKWORLD_POLICY_PORT),
    ],
    REPO_ROOT,
  );
  const deadline = Date.now() + 120_000;
  while (!(await answers(`${url}/models`))) {
    if (!(await livePid(server))) throw new Error(`the policy server exited; see ${server.logFile}`);
    if (Date.now() > deadline)
      throw new Error(`the policy server did not answer in 120 s; see ${server.logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  log(`policy     ${url}  serves every run's latest checkpoint by model name`);
}
