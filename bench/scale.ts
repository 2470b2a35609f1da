/**
 * Scale: where the cost of a Synthesis run stops growing linearly. Runs the real stack (its own
 * Temporal dev server and PostgreSQL, an in-process worker with MockworldPlugin, the scripted model
 * world at 0 ms in a child process) at each size of BENCH_SCALE_TASKS, and measures per task: wall
 * time, CPU of the worker, the dev server and PostgreSQL, PostgreSQL and Temporal persistence bytes,
 * events per workflow run; peak RSS of each process; and the latency of what a user does on the
 * finished run (`status`, `status --task N`, `report`, the viewer's pages, `export`).
 *
 * Then the largest run is grown in PostgreSQL to BENCH_SCALE_AMPLIFY tasks (bench/scale/amplify.ts:
 * its tasks, demonstrations, mappings and ledger rows copied as new tasks) and the user's calls are
 * timed again, with the spend check a budgeted run makes before each task: from the usage rollup
 * (migration 036) and by summing the ledger, as before it.
 *
 * Run: `npx tsx bench/scale.ts`. Knobs: BENCH_SCALE_TASKS (default "1000,4000"; 10000 takes about
 * 25 min on 2 cores), BENCH_SCALE_AMPLIFY (100000), BENCH_CONCURRENCY (64). Writes
 * bench/results/scale.json. Everything started here is stopped or removed at the end.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { taskIdOf } from '../activities/synthesis/task-id.js';
import { createTestDatabase, query } from '../testkit/database.js';
import { resultWithin, startBenchRun, startBenchTemporal, type BenchTemporal } from '../testkit/bench-run.js';
import { serveOrRun, spawnModelServer } from '../testkit/model-server-process.js';
import { startPostgresInstance, type PostgresInstance } from '../testkit/postgres-instance.js';
import { scriptedPersonas, synthesisScript } from '../testkit/synthesis-script.js';
import { CPU_WORKER_TUNING } from '../workers/cpu-worker.js';
import { MOCKWORLD_WORKFLOWS_PATH, MockworldPlugin } from '../workers/plugin.js';
import type { SynthesisSummary } from '../workflows/synthesis.js';
import { processCpuMs } from './measure/cpu.js';
import { scanAll, scanChain } from './measure/history.js';
import { writeResults } from './measure/results.js';
import { amplifyRun } from './scale/amplify.js';
import { filesBytes, peakRssMiB, postgresCpuMs } from './scale/processes.js';
import { renderScaleTables, type AmplifiedFigures, type SizeFigures } from './scale/report.js';
import { timed, timeUserCalls } from './scale/user-calls.js';
import { getPool } from '../activities/store/db.js';
import { RUN_OF_CALL, runSpend } from '../activities/llm/spend.js';

const SIZES = (process.env.BENCH_SCALE_TASKS ?? '1000,4000').split(',').map(Number);
const AMPLIFY_TO = Number(process.env.BENCH_SCALE_AMPLIFY ?? 100_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
/** Task histories read for events per task workflow (evenly spaced over the run). */
const SAMPLED_TASKS = 20;

interface Stack {
  readonly temporal: BenchTemporal;
  readonly postgres: PostgresInstance;
  readonly connection: NativeConnection;
  readonly workflowBundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;
  readonly modelUrl: string;
  /** One database for every size (the CLI's commands read DATABASE_URL once per process). */
  readonly databaseUrl: string;
  readonly dir: string;
  readonly log: (line: string) => void;
}

function spec(personasPath: string, tasks: number, modelUrl: string) {
  const role = { endpoint: { baseUrl: modelUrl, model: 'scripted', maxConcurrency: 256 } };
  return {
    kind: 'Synthesis',
    name: 'scale',
    personas: { path: personasPath },
    tasks,
    demonstrationsPerTask: 2,
    maxTurns: 6,
    coverageThreshold: 0.5,
    concurrency: CONCURRENCY,
    models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
  };
}

/** A worker with the CPU worker's settings on the run's queue; resolves to its stop. */
async function startWorker(stack: Stack, taskQueue: string): Promise<() => Promise<void>> {
  const worker = await Worker.create({
    connection: stack.connection,
    taskQueue,
    workflowBundle: stack.workflowBundle,
    plugins: [new MockworldPlugin({ databaseUrl: stack.databaseUrl })],
    ...CPU_WORKER_TUNING,
  });
  const running = worker.run();
  return async () => {
    worker.shutdown();
    await running;
  };
}

/** One Synthesis run of `tasks` tasks (workflow id and task queue `scale-<tasks>`); its figures. */
async function runSize(stack: Stack, tasks: number): Promise<SizeFigures> {
  const { temporal, postgres, log, databaseUrl } = stack;
  const personas = path.join(stack.dir, `personas-${tasks}.jsonl`);
  await writeFile(personas, scriptedPersonas(tasks, false));
  const taskQueue = `scale-${tasks}`;
  const stopWorker = await startWorker(stack, taskQueue);
  const dbSize = async () =>
    Number(
      (await query<{ n: string }>(databaseUrl, 'SELECT pg_database_size(current_database()) AS n'))[0]!.n,
    );
  const temporalFile = path.join(stack.dir, 'temporal.db');
  const before = {
    self: process.cpuUsage(),
    temporal: processCpuMs(temporal.server.process.pid),
    postgres: await postgresCpuMs(postgres.pid!),
    pgBytes: await dbSize(),
    temporalBytes: filesBytes(temporalFile),
  };
  const workflowId = `scale-${tasks}`;
  const t0 = performance.now();
  const handle = await temporal.client.workflow.start('Synthesis', {
    args: [spec(personas, tasks, stack.modelUrl)],
    taskQueue,
    workflowId,
  });
  const summary = await resultWithin<SynthesisSummary>(temporal, handle, 300_000 + tasks * 500);
  const wallMs = performance.now() - t0;
  const self = process.cpuUsage(before.self);
  const cpuMs = {
    worker: (self.user + self.system) / 1000,
    temporal: processCpuMs(temporal.server.process.pid) - before.temporal,
    postgres: (await postgresCpuMs(postgres.pid!)) - before.postgres,
  };
  const pgBytes = (await dbSize()) - before.pgBytes;
  const temporalBytes = filesBytes(temporalFile) - before.temporalBytes;
  log(`${tasks} tasks in ${(wallMs / 1000).toFixed(1)} s: ${JSON.stringify(summary)}`);

  const chain = await scanChain(temporal.client, workflowId, handle.firstExecutionRunId);
  const sampled = Array.from({ length: Math.min(SAMPLED_TASKS, tasks) }, (_, i) =>
    taskIdOf(workflowId, Math.floor((i * tasks) / Math.min(SAMPLED_TASKS, tasks))),
  );
  const taskScans = await scanAll(temporal.client, sampled, 8);
  // With the worker still up, as during a run: `status` asks the run itself.
  const userCalls = await timeUserCalls(workflowId, tasks);
  await stopWorker();
  log(`${tasks} tasks: user calls timed`);
  return {
    tasks,
    wallMs,
    summary,
    cpuMs,
    pgBytes,
    temporalBytes,
    parentRuns: chain.length,
    parentEventsMaxPerRun: Math.max(...chain.map((s) => s.events)),
    taskEventsMean: taskScans.reduce((n, s) => n + s.events, 0) / taskScans.length,
    peakRssMiB: {
      worker: process.resourceUsage().maxRSS / 1024,
      temporal: await peakRssMiB(temporal.server.process.pid!),
      postgres: await peakRssMiB(postgres.pid!, true),
    },
    userCalls,
  };
}

/**
 * The largest run grown to AMPLIFY_TO tasks: the user's calls, and the spend check a budgeted run
 * makes before each task, from the rollup against summing the ledger (as before migration 036).
 */
async function amplified(stack: Stack, tasks: number): Promise<AmplifiedFigures> {
  const { databaseUrl } = stack;
  const workflowId = `scale-${tasks}`;
  stack.log(`growing ${workflowId} to ${AMPLIFY_TO} tasks in PostgreSQL`);
  const added = await amplifyRun(databaseUrl, workflowId, tasks, AMPLIFY_TO);
  const [size] = await query<{ n: string; calls: number }>(
    databaseUrl,
    'SELECT pg_database_size(current_database()) AS n, (SELECT count(*)::int FROM llm_calls) AS calls',
  );
  const stopWorker = await startWorker(stack, workflowId);
  const userCalls = await timeUserCalls(workflowId, AMPLIFY_TO);
  await stopWorker();
  stack.log('user calls timed; the spend check from the rollup and from the ledger');
  const pool = getPool(databaseUrl);
  const rollup = await timed(3, async () => void (await runSpend(pool, workflowId)));
  await query(databaseUrl, 'DROP INDEX llm_calls_owner_role');
  const ledgerSum = await timed(3, async () => void (await pool.query(SPEND_BEFORE_036, [workflowId])));
  return {
    tasks: AMPLIFY_TO,
    added,
    pgBytes: Number(size!.n),
    ledgerRows: size!.calls,
    userCalls,
    spendCheckMs: { rollup, ledgerSum },
  };
}

/** runSpend's query before migration 036: the run's calls summed from the whole ledger. */
const SPEND_BEFORE_036 = `SELECT coalesce(sum(cost_usd), 0)::float8 AS cost, count(*)::int AS calls FROM llm_calls
  WHERE run_id = $1 OR (starts_with(run_id, $1 || '-task-') AND ${RUN_OF_CALL} = $1)`;

async function main(): Promise<void> {
  const run = await startBenchRun('scale');
  const { dir, log, onCleanup, cleanupAll, startedAt } = run;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const postgres = await startPostgresInstance({ settings: { shared_buffers: '256MB' }, log });
    onCleanup('own PostgreSQL', () => postgres.remove());
    const models = await spawnModelServer(fileURLToPath(import.meta.url));
    onCleanup('model server', () => models.stop());
    const temporal = await startBenchTemporal(run);
    const connection = await NativeConnection.connect({ address: temporal.server.address });
    onCleanup('worker connection', () => connection.close());
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      logger: new DefaultLogger('WARN'),
    });
    const db = await createTestDatabase('mw_scale', postgres.adminUrl);
    process.env.DATABASE_URL = db.url;
    process.env.TEMPORAL_ADDRESS = temporal.server.address;
    const stack: Stack = {
      ...{
        temporal,
        postgres,
        connection,
        workflowBundle,
        modelUrl: models.url,
        databaseUrl: db.url,
        dir,
        log,
      },
    };
    const figures: SizeFigures[] = [];
    for (const tasks of SIZES) figures.push(await runSize(stack, tasks));
    const grown = await amplified(stack, SIZES.at(-1)!);
    console.log(renderScaleTables(figures, grown));
    await writeResults('scale', {
      concurrency: CONCURRENCY,
      totalBenchSeconds: (performance.now() - startedAt) / 1000,
      notes: [
        'Each size: a run in one database (bytes per task = its growth during the run) on the bench’s own PostgreSQL (shared_buffers 256MB), the same dev server (SQLite), an in-process worker with the CPU worker’s settings (CPU_WORKER_TUNING), the scripted model world at 0 ms in a child process.',
        'CPU per task: this process (worker, client, viewer), the dev server, PostgreSQL (postmaster, exited and live backends). Bytes per task: pg_database_size and the SQLite files’ growth during the run.',
        'Peak RSS: the highest so far (VmHWM; the process lives through every size, smallest first); PostgreSQL: its largest process.',
        'User calls: the CLI commands run in this process (Node start-up not counted), the viewer over HTTP; median (range) of 3.',
        `Grown: the largest run copied in PostgreSQL to ${AMPLIFY_TO} tasks; Temporal holds only the real run.`,
      ],
      sizes: figures,
      amplified: grown,
    });
  } finally {
    await cleanupAll();
  }
}

await serveOrRun(synthesisScript, main);
