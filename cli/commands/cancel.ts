import { connectClient } from '../../client/connect.js';
import { cancelRun } from '../../client/runs.js';
import type { Command } from './command.js';

/** `mockworld cancel <id>`: cancels a run, which records 'cancelled'. */
export const cancelCommand: Command = {
  name: 'cancel',
  async run({ print, needId }) {
    const id = needId();
    await cancelRun(await connectClient(), id);
    print(`cancellation requested for ${id}`, { workflowId: id, cancelled: true });
    return 0;
  },
};
