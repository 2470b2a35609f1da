/** The Temporal path of the GRPO benchmarks: the CPU worker, the trainer on the GPU queue, one run. */
import path from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type bundleWorkflowCode } from '@temporalio/worker';
import type { DevServer } from '../../deploy/temporal-dev-server.js';
import { resultWithin, type BenchRun } from '../../testkit/bench-run.js';
import type { ModelServerProcess } from '../../testkit/model-server-process.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { CPU_WORKER_TUNING } from '../../workers/cpu-worker.js';
import { MockworldPlugin } from '../../workers/plugin.js';
import type { GrpoSummary } from '../../workflows/grpo-training.js';
import { SETTINGS } from './settings.js';
import { standInTrainerActivities } from './standin-trainer.js';

/** What every path of the GRPO benchmark runs against (started once by bench/grpo.ts). */
export interface BenchContext extends Pick<BenchRun, 'dir' | 'nonce' | 'onCleanup' | 'log'> {
  readonly client: Client;
  readonly connection: Connection;
  readonly nativeConnection: NativeConnection;
  readonly server: DevServer;
  readonly models: ModelServerProcess;
  /** One bundle of the plugin's workflows for every worker. */
  readonly workflowBundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;
  readonly pending: AbortController;
}

/** A CPU worker as workers/cpu-worker.ts builds it (one bundle for all), plus the trainer on the GPU queue. */
export async function startWorkers(
  ctx: BenchContext,
  databaseUrl: string,
  tag: string,
  trainer: 'standin' | 'python',
  tuning: Record<string, unknown> = {},
) {
  const taskQueue = `bench-grpo-${ctx.nonce}-${tag}`;
  const gpuTaskQueue = `${taskQueue}-gpu`;
  const worker = await Worker.create({
    connection: ctx.nativeConnection,
    taskQueue,
    workflowBundle: ctx.workflowBundle,
    plugins: [new MockworldPlugin({ databaseUrl })],
    ...CPU_WORKER_TUNING,
    ...SETTINGS.workerOverrides,
    ...tuning,
  });
  const workers: Worker[] = [worker];
  let python: PythonProcess | undefined;
  if (trainer === 'standin') {
    workers.push(
      await Worker.create({
        connection: ctx.nativeConnection,
        taskQueue: gpuTaskQueue,
        activities: standInTrainerActivities(databaseUrl, path.join(ctx.dir, 'standin-checkpoints')),
        maxConcurrentActivityTaskExecutions: 1,
      }),
    );
  } else {
    python = startPython(
      'mockworld_trainer.worker',
      [],
      {
        TEMPORAL_ADDRESS: ctx.server.address,
        MOCKWORLD_GPU_TASK_QUEUE: gpuTaskQueue,
        MOCKWORLD_CHECKPOINT_DIR: path.join(ctx.dir, 'checkpoints'),
        MOCKWORLD_TRAINER_DEVICE: 'cpu',
        DATABASE_URL: databaseUrl,
      },
      /trainer worker:/,
    );
    await python.ready;
  }
  const running = workers.map((w) => w.run());
  const stop = ctx.onCleanup(`workers ${taskQueue}`, async () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.all(running.map((r) => r.catch(() => undefined)));
    await python?.kill();
  });
  while (workers.some((w) => w.getState() !== 'RUNNING')) await new Promise((r) => setTimeout(r, 20));
  return { taskQueue, gpuTaskQueue, stop, pythonPid: python?.child.pid };
}

/** Starts a GrpoTraining run and waits for its summary (a hang fails after SETTINGS.runTimeoutMs). */
export async function runTemporal(
  ctx: Pick<BenchContext, 'client' | 'connection' | 'pending'>,
  workflowId: string,
  taskQueue: string,
  spec: unknown,
) {
  const handle = await ctx.client.workflow.start('GrpoTraining', { args: [spec], taskQueue, workflowId });
  const t0 = performance.now();
  const summary = await resultWithin<GrpoSummary>(ctx, handle, SETTINGS.runTimeoutMs);
  return { summary, wallMs: performance.now() - t0, firstRunId: handle.firstExecutionRunId };
}
