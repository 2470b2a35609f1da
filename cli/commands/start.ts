import { connectClient } from '../../client/connect.js';
import { startRun } from '../../client/runs.js';
import { waitForRun } from '../run-commands.js';
import { readSpecFile } from '../spec-file.js';
import { renderSummary } from '../summary-view.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/**
 * `mockworld start <spec> [--id ID] [--wait]`: validates a spec, starts its run, and with --wait
 * waits for its result.
 */
export const startCommand: Command = {
  name: 'start',
  async run({ values, args, print }) {
    const file = args[0];
    if (!file) throw new UsageError('mockworld start needs a spec file');
    const spec = await readSpecFile(file);
    const client = await connectClient();
    const id = await startRun(client, spec, values.id);
    // With --json, stdout holds one JSON document only: the id goes into it instead.
    if (!values.json) console.log(`started ${spec.kind} run ${id}`);
    if (!values.wait) {
      if (values.json) print('', { workflowId: id });
      return 0;
    }
    const result = await waitForRun(client, id);
    print(renderSummary(result as Record<string, unknown>), { workflowId: id, result });
    return 0;
  },
};
