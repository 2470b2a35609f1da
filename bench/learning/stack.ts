/**
 * What both learning benchmarks run on (bench/learning.ts, bench/learning-mock-world.ts): the
 * bench's own Temporal dev server and database, a CPU worker, and the Python trainer worker and
 * policy server on the embedded model's GGUF weights (de-quantized once, then cached), each
 * stopped by the bench run's cleanup. Stages are timed for the report.
 */
import path from 'node:path';
import { closePools } from '../../activities/store/db.js';
import { embeddedModelPath, ensureEmbeddedModel } from '../../deploy/embedded-model/fetch-model.js';
import { loadEnvironment } from '../../schemas/environment.js';
import {
  resultWithin,
  startBenchRun,
  startBenchTemporal,
  type BenchRun,
  type BenchTemporal,
} from '../../testkit/bench-run.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startPython } from '../../testkit/python-process.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

/** One timed stage of a benchmark. */
export interface Stage {
  readonly name: string;
  readonly seconds: number;
}

/** The policy as a spec names it: the embedded model's GGUF, trained in float32 on the CPU. */
export interface GgufBase {
  readonly kind: 'gguf';
  readonly path: string;
  readonly dtype: 'float32';
}

export interface LearningStack {
  readonly run: BenchRun;
  readonly temporal: BenchTemporal;
  readonly db: TestDatabase;
  readonly worker: TestWorker;
  readonly base: GgufBase;
  /** The policy server's OpenAI base URL (any run, any step: `<runId>@<step>`). */
  readonly baseUrl: string;
  readonly gpuQueue: string;
  /** Environment of the bench's Python processes (Temporal, queues, checkpoints, database). */
  readonly env: Record<string, string>;
  readonly stages: Stage[];
  /** Runs `work` as a named stage: its wall time is logged and kept in `stages`. */
  timed<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** Starts workflow `type` with `spec` (its kind added) on the CPU worker and waits for its result. */
  execute<T>(type: string, workflowId: string, spec: Record<string, unknown>): Promise<T>;
}

/** Starts the stack of benchmark `name`; the caller runs `stack.run.cleanupAll()` at the end. */
export async function startLearningStack(name: string): Promise<LearningStack> {
  const gguf = embeddedModelPath(loadEnvironment().MOCKWORLD_HOME); // before the bench's own home
  await ensureEmbeddedModel();
  const run = await startBenchRun(name);
  try {
    return await startOn(run, name, gguf);
  } catch (error) {
    await run.cleanupAll();
    throw error;
  }
}

async function startOn(run: BenchRun, name: string, gguf: string): Promise<LearningStack> {
  const stages: Stage[] = [];
  const timed = async <T>(stage: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await work();
    stages.push({ name: stage, seconds: (performance.now() - started) / 1000 });
    run.log(`${stage}: ${stages.at(-1)!.seconds.toFixed(0)} s`);
    return result;
  };
  const temporal = await startBenchTemporal(run);
  const db = await createTestDatabase('mw_bench');
  run.onCleanup('database', () => db.drop());
  run.onCleanup('pools', () => closePools());
  const worker = await startTestWorker(temporal.server.address, db.url);
  run.onCleanup('CPU worker', () => worker.close());
  const gpuQueue = `${name}-gpu-${run.nonce}`;
  const env = {
    TEMPORAL_ADDRESS: temporal.server.address,
    MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
    MOCKWORLD_CHECKPOINT_DIR: path.join(run.dir, 'checkpoints'),
    MOCKWORLD_TRAINER_DEVICE: 'cpu',
    DATABASE_URL: db.url,
  };
  const base: GgufBase = { kind: 'gguf', path: gguf, dtype: 'float32' };
  const policy = await timed('start trainer and policy server (de-quantize the GGUF once)', async () => {
    const policyServer = startPython(
      'mockworld_trainer.policy_server',
      ['--any-run', '--port', '0', '--base', JSON.stringify(base)],
      env,
      /policy server for runs under .* at http/,
    );
    run.onCleanup('policy server', () => policyServer.kill());
    await policyServer.ready; // it converts the GGUF; the trainer then finds the cached directory
    const trainerWorker = startPython('mockworld_trainer.worker', [], env, /trainer worker:/);
    run.onCleanup('trainer', () => trainerWorker.kill());
    await trainerWorker.ready;
    return policyServer;
  });
  const baseUrl = /(http:\/\/\S+\/v1)/.exec(await policy.ready)![1]!;
  const execute = <T>(type: string, workflowId: string, spec: Record<string, unknown>) =>
    temporal.client.workflow
      .start(type, { taskQueue: worker.taskQueue, workflowId, args: [{ kind: type, ...spec }] })
      .then((handle) => resultWithin<T>(temporal, handle, 3 * 60 * 60_000));
  return { run, temporal, db, worker, base, baseUrl, gpuQueue, env, stages, timed, execute };
}
