import { connectClient } from '../../client/connect.js';
import { setBudget } from '../../client/runs.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/** `mockworld budget <id> <usd>`: sets a run's budget for priced model calls. */
export const budgetCommand: Command = {
  name: 'budget',
  async run({ args, print, needId }) {
    const id = needId();
    const usd = Number(args[1]);
    if (!(Number.isFinite(usd) && usd > 0))
      throw new UsageError('mockworld budget needs a run id and an amount in USD > 0');
    await setBudget(await connectClient(), id, usd);
    print(`budget of ${id} set to $${usd}`, { workflowId: id, budgetUsd: usd });
    return 0;
  },
};
