/**
 * A worker process of worker-restart.test.ts: mockworld's plugin (and so its attempt journal)
 * with the test's HoldProbe workflow and `hold` activity. Environment: TEMPORAL_ADDRESS,
 * DATABASE_URL, TASK_QUEUE, and HOLD_DIR, where `hold` writes `running-<workflow>-<attempt>-<pid>`
 * and waits for a file `release`.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { MockworldPlugin } from '../../workers/plugin.js';

const dir = process.env.HOLD_DIR!;

async function hold(): Promise<{ attempt: number; pid: number }> {
  const { info, cancellationSignal } = Context.current();
  writeFileSync(
    path.join(dir, `running-${info.workflowExecution!.workflowId}-${info.attempt}-${process.pid}`),
    '',
  );
  while (!existsSync(path.join(dir, 'release'))) {
    if (cancellationSignal.aborted) throw cancellationSignal.reason;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { attempt: info.attempt, pid: process.pid };
}

const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  taskQueue: process.env.TASK_QUEUE!,
  workflowsPath: fileURLToPath(new URL('./worker-restart.workflows.ts', import.meta.url)),
  activities: { hold },
  plugins: [new MockworldPlugin({ databaseUrl: process.env.DATABASE_URL! })],
});
await worker.run();
await connection.close();
