import { stackDown, stackStatus, stackUp } from '../../deploy/stack.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { temporalTarget } from '../../services/temporal/connection.js';
import { renderTable } from '../table.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/** `mockworld stack up|down|status`: the local Temporal dev server, PostgreSQL schema and embedded model. */
export const stackCommand: Command = {
  name: 'stack',
  async run({ args, print }) {
    const action = args[0];
    if (action === 'up') await stackUp((line) => console.log(line), loadEnvironment(), temporalTarget());
    else if (action === 'down') await stackDown((line) => console.log(line));
    else if (action === 'status') {
      const rows = await stackStatus(loadEnvironment(), temporalTarget());
      print(renderTable(rows as unknown as Record<string, unknown>[]), rows);
      return rows.every((row) => row.state === 'up') ? 0 : 1;
    } else throw new UsageError('mockworld stack needs up, down or status');
    return 0;
  },
};
