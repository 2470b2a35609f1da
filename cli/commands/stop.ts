import { connectClient } from '../../client/connect.js';
import { stopSignal } from '../../workflows/grpo-controls.js';
import type { Command } from './command.js';

/** `mockworld stop <id>`: a GRPO or SFT run finishes its iteration, keeps its checkpoint and completes. */
export const stopCommand: Command = {
  name: 'stop',
  async run({ print, needId }) {
    const id = needId();
    await (await connectClient()).workflow.getHandle(id).signal(stopSignal);
    print(`stop sent to ${id}: it completes after the current iteration`, {
      workflowId: id,
      signal: 'stop',
    });
    return 0;
  },
};
