import { redactUrl } from '../../activities/store/db.js';
import { givenDatabaseUrl, loadEnvironment } from '../../schemas/environment.js';
import { runCpuWorker } from '../../workers/cpu-worker.js';
import type { Command } from './command.js';

/**
 * A worker writes runs, ledgers and datasets into PostgreSQL. Without DATABASE_URL it would use
 * the local stack's database; started with no terminal (a service, a container, a job) that may
 * be someone else's, so it refuses unless told `--local-database`. At a terminal it says which
 * database it uses. Returns the refusal, or undefined to go on.
 */
function unnamedDatabaseRefusal(localDatabase: boolean): string | undefined {
  if (givenDatabaseUrl()) return undefined;
  const fallback = redactUrl(loadEnvironment().DATABASE_URL);
  if (localDatabase || process.stdin.isTTY) {
    console.error(`worker: DATABASE_URL is not set; writing into the local stack's database ${fallback}`);
    return undefined;
  }
  return (
    'worker: DATABASE_URL is not set, and no terminal is attached, so nothing says which database ' +
    `this worker may write into. Set DATABASE_URL, or pass --local-database to use ${fallback}.`
  );
}

/** `mockworld worker [--task-queue Q] [--local-database]`: a CPU worker (workflows + activities) until Ctrl-C. */
export const workerCommand: Command = {
  name: 'worker',
  async run({ values }) {
    const refusal = unnamedDatabaseRefusal(values['local-database']);
    if (refusal) {
      console.error(refusal);
      return 2;
    }
    console.error(
      `worker polling ${values['task-queue'] ?? loadEnvironment().MOCKWORLD_TASK_QUEUE}; Ctrl-C to stop`,
    );
    await runCpuWorker({ taskQueue: values['task-queue'] });
    return 0;
  },
};
