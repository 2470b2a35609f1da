import { loadEnvironment } from '../../schemas/environment.js';
import { runCpuWorker } from '../../workers/cpu-worker.js';
import type { Command } from './command.js';

/** `mockworld worker [--task-queue Q]`: a CPU worker (workflows + activities) until Ctrl-C. */
export const workerCommand: Command = {
  name: 'worker',
  async run({ values }) {
    console.error(
      `worker polling ${values['task-queue'] ?? loadEnvironment().MOCKWORLD_TASK_QUEUE}; Ctrl-C to stop`,
    );
    await runCpuWorker({ taskQueue: values['task-queue'] });
    return 0;
  },
};
