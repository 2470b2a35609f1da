/**
 * GRPO orchestration: (1) history events and the largest payload per workflow run for one GRPO
 * iteration at the seed's scale (global batch 128 tasks x n = 16 rollouts = 2048 rollouts), on the
 * parent `GrpoTraining` run and on every `GrpoGroup` child run; (2) rollout throughput of the
 * Temporal path (the real `GrpoTraining` → `GrpoGroup` → `runJudgedRolloutGroup` workflows
 * and activities on an in-process CPU worker against a CLI dev server) against a plain in-process
 * loop calling the same activities in the same order at the same concurrency (256 rollouts in
 * flight: 16 groups of 16), at 50 ms and 0 ms model latency (the target; CPU-bound on 2
 * cores) and at 2 s (seconds per call, as a real policy takes: the model latency bounds both).
 * Everything runs against a scripted OpenAI-compatible model server (policy, tool simulator, user
 * simulator, judge) in a child process.
 *
 * Trainer step: by default a STAND-IN for the GPU step is registered on the GPU task queue of each
 * run, in this process (a TypeScript implementation of the `trainer.grpoStep` and
 * `trainer.saveCheckpoint` activity names: it reads the step's batch from `trainer_batches` by its
 * reference, checks it and records the step (record.json per step in a temp checkpoint dir, step n
 * only after n-1, a repeated step replayed), but computes no gradient). The bench measures the
 * orchestration, not the trainer. `BENCH_TRAINER=python` runs the real Python trainer worker
 * (workers/trainer, CPU torch, tiny random model; needs `bash deploy/trainer-venv.sh`) instead, for
 * the scale run only.
 *
 * Run: `npx tsx bench/grpo.ts`. Prints Markdown tables and notes, writes bench/results/grpo.json.
 * Knobs (environment): BENCH_GRPO_SCALE_TASKS (128), BENCH_GRPO_N (16), BENCH_GRPO_TASKS (tasks
 * per throughput run, 32 = 512 rollouts), BENCH_GRPO_WARMUP_TASKS (8: an unmeasured first pass of
 * both paths), BENCH_GRPO_GROUPS_IN_FLIGHT (16: x n = 256 rollouts in
 * flight), BENCH_LATENCIES ("50,0,2000"), BENCH_GRPO_SKIP_SCALE=1, BENCH_TRAINER (standin | python),
 * BENCH_GRPO_BEFORE_LATENCIES ("50": latencies at which the Temporal path also runs with the worker
 * settings before the tuning of workers/cpu-worker.ts, for a before/after comparison),
 * BENCH_GRPO_WORKER_OPTIONS (JSON Worker options merged over the CPU worker's, for experiments),
 * BENCH_GRPO_TIMEOUT_MS (420000: a run that takes longer is terminated and the bench fails).
 * Everything started here (dev server, model server, workers, databases, temp dir) is stopped or
 * removed at the end, on failure and on SIGINT/SIGTERM too.
 *
 * This file is the script; its pieces are in bench/grpo/ (the scripted world and the trainer
 * stand-in are shared with bench/worker-memory.ts).
 */
import { DefaultLogger, NativeConnection, Runtime, bundleWorkflowCode } from '@temporalio/worker';
import { startBenchRun, startBenchTemporal } from '../testkit/bench-run.js';
import { CPU_WORKER_TUNING } from '../workers/cpu-worker.js';
import { MOCKWORLD_WORKFLOWS_PATH } from '../workers/plugin.js';
import { scaleRun, throughputCell, warmUp, type ScaleFigures, type ThroughputCell } from './grpo/paths.js';
import { NOTES, print } from './grpo/report.js';
import { BEFORE_TUNING, SETTINGS } from './grpo/settings.js';
import type { BenchContext } from './grpo/temporal.js';
import { MAX_TURNS, MODEL_MAX_CONCURRENCY, startGrpoWorldServer } from './grpo/world.js';
import { writeResults } from './measure/results.js';

async function main(): Promise<void> {
  const run = await startBenchRun('grpo');
  const { startedAt, log, onCleanup, cleanupAll } = run;

  let scale: ScaleFigures | undefined;
  const cells: ThroughputCell[] = [];
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const models = await startGrpoWorldServer();
    onCleanup('model server', () => models.stop());
    const temporal = await startBenchTemporal(run);
    const nativeConnection = await NativeConnection.connect({ address: temporal.server.address });
    onCleanup('worker connection', () => nativeConnection.close());
    log(`dev server at ${temporal.server.address}, model server at ${models.url}`);
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      logger: new DefaultLogger('WARN'),
    });
    log('workflow bundle built');
    const ctx: BenchContext = { ...run, ...temporal, nativeConnection, models, workflowBundle };
    const [first] = SETTINGS.latenciesMs;
    if (SETTINGS.warmupTasks > 0 && first !== undefined) await warmUp(ctx, first);
    for (const latency of SETTINGS.latenciesMs) cells.push(await throughputCell(ctx, latency));
    if (!SETTINGS.skipScale) scale = await scaleRun(ctx);
  } finally {
    await cleanupAll();
  }
  const totalBenchSeconds = (performance.now() - startedAt) / 1000;
  print(scale, cells, totalBenchSeconds);
  await writeResults('grpo', {
    totalBenchSeconds,
    settings: {
      scaleTasks: SETTINGS.scaleTasks,
      rolloutsPerTask: SETTINGS.rolloutsPerTask,
      throughputTasks: SETTINGS.throughputTasks,
      warmupTasks: SETTINGS.warmupTasks,
      groupsInFlight: SETTINGS.groupsInFlight,
      maxTurns: MAX_TURNS,
      cpuWorker: { ...CPU_WORKER_TUNING, ...SETTINGS.workerOverrides },
      before: BEFORE_TUNING,
      modelMaxConcurrency: MODEL_MAX_CONCURRENCY,
      trainer: SETTINGS.trainer,
    },
    notes: NOTES,
    scale: scale && { ...scale },
    throughput: cells,
  });
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
}
process.exit(); // everything was stopped; do not wait on a stray handle of the SDK or a pool
