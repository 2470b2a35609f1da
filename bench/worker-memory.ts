/**
 * CPU worker memory with 1,000+ rollouts in flight, and the model calls the model-call cache and the
 * tool mapping save.
 *
 * One real CPU worker (`runCpuWorker` of workers/cpu-worker.ts, the MockworldPlugin's workflows and
 * activities) runs in its own OS process, so its resident memory is its own, with its default
 * settings: a group's n rollouts run in one activity, so the 64 groups take 64 of its activity
 * slots (default 512) and every rollout of the iteration runs at once. One `GrpoTraining` iteration of 64 tasks x n = 16 =
 * 1,024 rollouts, all 64 groups in flight (`rolloutConcurrency` 64), plays in the GRPO benchmark's
 * scripted world (bench/grpo/world.ts; its model server in a child process) answering every call after a fixed latency (6 s by
 * default), long enough that every rollout is started before the first one ends. The worker's
 * VmRSS is sampled every 250 ms from /proc/<pid>/status, and its peak is VmHWM (reset with
 * /proc/<pid>/clear_refs before each run, so it is the peak of that run, not of start-up's
 * workflow bundling). Rollouts in flight are counted every 250 ms as the run's episodes opened and
 * not yet ended in PostgreSQL (a rollout writes its episode row before its first model call).
 *
 * Then the same iteration runs again (a second GrpoTraining run with the same spec: same dataset,
 * endpoints, sampling and policy version step-0) on the same database: every model call it makes
 * has the identity of one the first run paid for, and every tool call is in the tool mapping.
 * Logical calls are counted from what the activities recorded (policy turns, user questions and
 * task-tool calls in `episodes`, one judge call per judgement), upstream calls at the model server,
 * paid calls as `llm_calls` rows.
 *
 * The trainer step is the GRPO benchmark's stand-in (bench/grpo/standin-trainer.ts) on the GPU queue (reads the batch, records the step,
 * computes no gradient). Everything started here (dev server, model server, worker process, the
 * stand-in's worker, the database, the temp dir) is stopped or removed at the end, on failure and
 * on SIGINT/SIGTERM too.
 *
 * Run: `npx tsx bench/worker-memory.ts`. Prints Markdown tables and notes, writes
 * bench/results/worker-memory.json. Knobs (environment): BENCH_WM_TASKS (64), BENCH_WM_N (16),
 * BENCH_WM_LATENCY_MS (6000), BENCH_WM_MAX_ACTIVITIES (the worker's activity slots; its default).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../deploy/paths.js';
import { stopChild } from '../deploy/processes.js';
import { createTestDatabase } from '../testkit/database.js';
import type { ModelServerStats } from '../testkit/model-server.js';
import { CPU_WORKER_TUNING } from '../workers/cpu-worker.js';
import { standInTrainerActivities } from './grpo/standin-trainer.js';
import { runTemporal } from './grpo/temporal.js';
import { insertKeptTasks, specFor, startGrpoWorldServer } from './grpo/world.js';
import { processCpuMs } from './measure/cpu.js';
import { writeResults } from './measure/results.js';
import { startBenchRun, startBenchTemporal } from '../testkit/bench-run.js';

const TASKS = Number(process.env.BENCH_WM_TASKS ?? 64);
const N = Number(process.env.BENCH_WM_N ?? 16);
const ROLLOUTS = TASKS * N;
const LATENCY_MS = Number(process.env.BENCH_WM_LATENCY_MS ?? 6000);
/** The worker's activity slots: its default holds every group (one activity each) at once. */
const MAX_ACTIVITIES = Number(
  process.env.BENCH_WM_MAX_ACTIVITIES ?? CPU_WORKER_TUNING.maxConcurrentActivityTaskExecutions,
);
const SAMPLE_MS = 250;
/** Idle time after the worker polls, before the first run; the idle RSS is the mean of its last half. */
const IDLE_MS = 8_000;
const TARGET_IN_FLIGHT = 1000;

const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

// ---------------------------------------------------------------------------------------------
// The worker process and its memory.

/** /proc/<pid>/status fields in KiB (VmRSS: resident now; VmHWM: peak resident since start or reset). */
function memoryKiB(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (Linux ≥ 4.0); false when the kernel refuses. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface WorkerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The last lines the worker wrote (for a failure message). */
  output(): string;
  /** SIGTERM (the worker drains and exits), SIGKILL after 15 s. */
  stop(): Promise<void>;
}

/**
 * `runCpuWorker` of workers/cpu-worker.ts in a fresh Node process that loads nothing else (no
 * bench code), with the activity slots raised to `maxConcurrentActivities`.
 */
function startCpuWorkerProcess(opts: {
  address: string;
  taskQueue: string;
  databaseUrl: string;
  home: string;
  maxConcurrentActivities: number;
}): WorkerProcess {
  const module = pathToFileURL(path.join(REPO_ROOT, 'workers', 'cpu-worker.ts')).href;
  const options = {
    address: opts.address,
    namespace: 'default',
    taskQueue: opts.taskQueue,
    databaseUrl: opts.databaseUrl,
    maxConcurrentActivities: opts.maxConcurrentActivities,
  };
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e', // CommonJS eval (an --input-type=module would be inherited by the SDK's workflow thread and break it)
      `import(${JSON.stringify(module)}).then((m) => m.runCpuWorker(${JSON.stringify(options)})).then(\n` +
        `  () => process.exit(0),\n` +
        `  (error) => { console.error(error); process.exit(1); },\n` +
        `);`,
    ],
    { cwd: REPO_ROOT, env: { ...process.env, MOCKWORLD_HOME: opts.home }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let tail = '';
  const keep = (chunk: Buffer) => void (tail = (tail + chunk.toString()).slice(-4_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return {
    child,
    pid: child.pid!,
    output: () => tail,
    stop: () => stopChild(child, { graceMs: 15_000 }),
  };
}

/** Resolves once the task queue has workflow and activity pollers (the worker is serving). */
async function untilPolling(
  connection: Connection,
  taskQueue: string,
  worker: WorkerProcess,
  timeoutMs = 120_000,
) {
  const deadline = Date.now() + timeoutMs;
  const pollers = async (type: proto.temporal.api.enums.v1.TaskQueueType) =>
    (
      await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: type,
      })
    ).pollers?.length ?? 0;
  while (Date.now() < deadline) {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null)
      throw new Error(`the worker process exited before polling:\n${worker.output()}`);
    if (
      (await pollers(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)) > 0 &&
      (await pollers(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)) > 0
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the worker did not poll ${taskQueue} within ${timeoutMs} ms:\n${worker.output()}`);
}

interface Sample {
  /** Seconds since the bench started. */
  readonly t: number;
  readonly rssKiB: number;
  /** Episodes of the current run opened and not ended (rollouts in flight); undefined between runs. */
  readonly inFlight?: number;
}

/** Samples the worker's RSS, and the current run's rollouts in flight, every {@link SAMPLE_MS}. */
class Sampler {
  readonly samples: Sample[] = [];
  private prefix: string | undefined;
  private querying = false;
  private inFlight: number | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly sql: pg.Client;

  private constructor(
    private readonly pid: number,
    databaseUrl: string,
    private readonly t0: number,
  ) {
    this.sql = new pg.Client({ connectionString: databaseUrl });
    this.timer = setInterval(() => this.tick(), SAMPLE_MS);
  }

  static async start(pid: number, databaseUrl: string, t0: number): Promise<Sampler> {
    const sampler = new Sampler(pid, databaseUrl, t0);
    await sampler.sql.connect();
    return sampler;
  }

  /** Counts the episodes whose id starts with `prefix` from now on (undefined: none). */
  track(prefix: string | undefined) {
    this.prefix = prefix;
    this.inFlight = undefined;
  }

  private tick() {
    const memory = memoryKiB(this.pid);
    if (!memory) return;
    this.samples.push({
      t: (performance.now() - this.t0) / 1000,
      rssKiB: memory.rss,
      ...(this.prefix ? { inFlight: this.inFlight ?? 0 } : {}),
    });
    const prefix = this.prefix;
    if (!prefix || this.querying) return;
    this.querying = true;
    this.sql
      .query<{ open: number }>(
        `SELECT count(*) FILTER (WHERE end_reason IS NULL)::int AS open FROM episodes WHERE starts_with(episode_id, $1)`,
        [prefix],
      )
      .then(({ rows }) => {
        if (this.prefix === prefix) this.inFlight = rows[0]?.open ?? 0;
      })
      .catch(() => undefined) // a PostgreSQL restart: the next tick tries again
      .finally(() => (this.querying = false));
  }

  since(t: number): Sample[] {
    return this.samples.filter((s) => s.t >= t);
  }

  now(): number {
    return (performance.now() - this.t0) / 1000;
  }

  async stop() {
    clearInterval(this.timer);
    await this.sql.end().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// What one run made and paid.

interface Counts {
  readonly episodes: number;
  /** Policy calls made: one per turn. */
  readonly policyCalls: number;
  /** User-simulator calls made: one per ask_user question. */
  readonly userCalls: number;
  /** Judge calls made: one per judgement. */
  readonly judgeCalls: number;
  /** Task-tool calls (ask_user excluded) and the ones refused by validation (never simulated). */
  readonly toolCalls: number;
  readonly toolErrors: number;
  /** `llm_calls` rows (paid calls) charged to the run, by role. */
  readonly paidByRole: Record<string, number>;
  /** Entries of the tool mapping after the run (all runs). */
  readonly mappingEntries: number;
  readonly rewardMean: number;
}

async function countRun(databaseUrl: string, runId: string): Promise<Counts> {
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  try {
    const { rows: ep } = await sql.query(
      `SELECT count(*)::int AS episodes, coalesce(sum(turns), 0)::int AS turns, coalesce(sum(user_questions), 0)::int AS questions,
              coalesce(sum(tool_calls), 0)::int AS tool_calls, coalesce(sum(tool_errors), 0)::int AS tool_errors
         FROM episodes WHERE starts_with(episode_id, $1)`,
      [`${runId}/it0/`],
    );
    const { rows: judged } = await sql.query(
      `SELECT count(*)::int AS n, coalesce(avg(reward), 0)::float8 AS mean FROM judgements WHERE run_id = $1`,
      [runId],
    );
    const { rows: paid } = await sql.query<{ role: string; n: number }>(
      `SELECT coalesce(role, '(none)') AS role, count(*)::int AS n FROM llm_calls WHERE run_id = $1 GROUP BY 1 ORDER BY 1`,
      [runId],
    );
    const { rows: mapping } = await sql.query(`SELECT count(*)::int AS n FROM tool_mappings`);
    return {
      episodes: ep[0].episodes,
      policyCalls: ep[0].turns,
      userCalls: ep[0].questions,
      judgeCalls: judged[0].n,
      toolCalls: ep[0].tool_calls,
      toolErrors: ep[0].tool_errors,
      paidByRole: Object.fromEntries(paid.map((r) => [r.role, r.n])),
      mappingEntries: mapping[0].n,
      rewardMean: judged[0].mean,
    };
  } finally {
    await sql.end();
  }
}

interface RunFigures {
  readonly label: string;
  readonly workflowId: string;
  readonly wallMs: number;
  readonly policyStep: number;
  /** Worker RSS right before the run (for the first run: the idle RSS, the mean over the idle window), MiB. */
  readonly rssBeforeMiB: number;
  /** VmHWM after the run (reset before it; or the highest sample, if above): the run's peak RSS, MiB. */
  readonly peakMiB: number;
  /** Highest VmRSS among the 250 ms samples of the run, MiB. */
  readonly peakSampledMiB: number;
  readonly peakResetOk: boolean;
  /** Rollouts in flight (episodes opened, not ended): highest 250 ms sample. */
  readonly maxInFlight: number;
  /** Seconds the sampled rollouts-in-flight count stayed ≥ {@link TARGET_IN_FLIGHT}. */
  readonly secondsAtTarget: number;
  readonly modelMaxInFlight: number;
  readonly modelByRole: Record<string, number>;
  readonly modelTotal: number;
  readonly workerCpuMs: number;
  readonly counts: Counts;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const run = await startBenchRun('wm');
  const { startedAt: t0, dir, nonce, log, onCleanup, cleanupAll } = run;

  if (MAX_ACTIVITIES < ROLLOUTS)
    throw new Error(`BENCH_WM_MAX_ACTIVITIES ${MAX_ACTIVITIES} < ${ROLLOUTS} rollouts`);
  const runs: RunFigures[] = [];
  let samples: Sample[] = [];
  let idle: { rssMiB: number; startupPeakMiB: number } | undefined;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const models = await startGrpoWorldServer();
    onCleanup('model server', () => models.stop());
    await models.setLatency(LATENCY_MS);
    const { server, connection, client, pending } = await startBenchTemporal(run);
    log(`dev server at ${server.address}, model server at ${models.url} (${LATENCY_MS} ms per call)`);

    const db = await createTestDatabase('mw_bench');
    onCleanup(`database ${db.url}`, () => db.drop());
    const synthesisRunId = `bench-syn-wm-${nonce}`;
    await insertKeptTasks(db.url, synthesisRunId, TASKS);

    // The stand-in trainer step on the GPU queue, in this process (not the measured worker).
    const taskQueue = `bench-wm-${nonce}`;
    const gpuTaskQueue = `${taskQueue}-gpu`;
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    onCleanup('worker connection', () => nativeConnection.close());
    const trainer = await Worker.create({
      connection: nativeConnection,
      taskQueue: gpuTaskQueue,
      activities: standInTrainerActivities(db.url, path.join(dir, 'standin-checkpoints')),
      maxConcurrentActivityTaskExecutions: 1,
    });
    const trainerRunning = trainer.run();
    onCleanup('stand-in trainer worker', async () => {
      if (trainer.getState() === 'RUNNING') trainer.shutdown();
      await trainerRunning.catch(() => undefined);
    });

    const worker = startCpuWorkerProcess({
      address: server.address,
      taskQueue,
      databaseUrl: db.url,
      home: dir,
      maxConcurrentActivities: MAX_ACTIVITIES,
    });
    onCleanup('CPU worker process', () => worker.stop());
    const sampler = await Sampler.start(worker.pid, db.url, t0);
    onCleanup('sampler', () => sampler.stop());
    samples = sampler.samples;
    await untilPolling(connection, taskQueue, worker);
    const pollingAt = sampler.now();
    log(`CPU worker (pid ${worker.pid}, ${MAX_ACTIVITIES} activity slots) polling`);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const idleSamples = sampler.since(pollingAt + IDLE_MS / 2000);
    idle = {
      rssMiB: idleSamples.reduce((s, x) => s + x.rssKiB, 0) / Math.max(1, idleSamples.length) / 1024,
      startupPeakMiB: (memoryKiB(worker.pid)?.hwm ?? NaN) / 1024,
    };
    log(`idle RSS ${idle.rssMiB.toFixed(0)} MiB (start-up peak ${idle.startupPeakMiB.toFixed(0)} MiB)`);

    const spec = specFor({
      synthesisRunId,
      modelUrl: models.url,
      model: 'wm',
      tasks: TASKS,
      groupsInFlight: TASKS,
      rolloutsPerTask: N,
      gpuTaskQueue,
    });

    for (const label of ['1st: cold', '2nd: same spec and policy version'] as const) {
      const workflowId = `bench-wm-${nonce}-${runs.length + 1}`;
      const before = memoryKiB(worker.pid);
      const peakResetOk = resetPeak(worker.pid);
      await models.reset();
      const cpu0 = processCpuMs(worker.pid);
      const startedAt = sampler.now();
      sampler.track(`${workflowId}/it0/`);
      const run = await runTemporal({ client, connection, pending }, workflowId, taskQueue, spec);
      sampler.track(undefined);
      const after = memoryKiB(worker.pid);
      const workerCpuMs = processCpuMs(worker.pid) - cpu0;
      const stats: ModelServerStats = await models.stats();
      const during = sampler.since(startedAt);
      const counts = await countRun(db.url, workflowId);
      const inFlight = during.map((s) => s.inFlight ?? 0);
      const figures: RunFigures = {
        label,
        workflowId,
        wallMs: run.wallMs,
        policyStep: run.summary.policyStep,
        // The first run starts from the idle worker: the mean over the idle window, not one sample.
        rssBeforeMiB: runs.length === 0 ? idle.rssMiB : (before?.rss ?? NaN) / 1024,
        // VmHWM can trail VmRSS by a page or two (the kernel syncs its counters lazily).
        peakMiB: Math.max(after?.hwm ?? NaN, ...during.map((s) => s.rssKiB)) / 1024,
        peakSampledMiB: Math.max(...during.map((s) => s.rssKiB)) / 1024,
        peakResetOk,
        maxInFlight: Math.max(0, ...inFlight),
        secondsAtTarget: (inFlight.filter((n) => n >= TARGET_IN_FLIGHT).length * SAMPLE_MS) / 1000,
        modelMaxInFlight: stats.maxInFlight,
        modelByRole: stats.byRole,
        modelTotal: stats.total,
        workerCpuMs,
        counts,
      };
      runs.push(figures);
      log(
        `${label}: ${counts.episodes} rollouts in ${(run.wallMs / 1000).toFixed(1)} s, max ${figures.maxInFlight} in flight ` +
          `(model requests ${stats.maxInFlight}), RSS ${figures.rssBeforeMiB.toFixed(0)} → peak ${figures.peakMiB.toFixed(0)} MiB, ` +
          `${stats.total} upstream model calls`,
      );
      if (counts.episodes !== ROLLOUTS || counts.judgeCalls !== ROLLOUTS)
        throw new Error(
          `${label}: ${counts.episodes} episodes, ${counts.judgeCalls} judgements, expected ${ROLLOUTS}`,
        );
    }
  } finally {
    await cleanupAll();
  }
  const totalSeconds = (performance.now() - t0) / 1000;
  print(idle!, runs, totalSeconds);
  await writeResults('worker-memory', {
    totalBenchSeconds: totalSeconds,
    settings: {
      tasks: TASKS,
      rolloutsPerTask: N,
      rollouts: ROLLOUTS,
      rolloutConcurrency: TASKS,
      modelLatencyMs: LATENCY_MS,
      worker: {
        process: 'runCpuWorker (workers/cpu-worker.ts) in its own Node process',
        maxConcurrentActivityTaskExecutions: MAX_ACTIVITIES,
        defaultMaxConcurrentActivityTaskExecutions: CPU_WORKER_TUNING.maxConcurrentActivityTaskExecutions,
        maxEagerActivityReservationsPerWorkflowTask:
          CPU_WORKER_TUNING.maxEagerActivityReservationsPerWorkflowTask,
      },
      sampleMs: SAMPLE_MS,
      trainer: 'stand-in (bench/grpo/standin-trainer.ts: batch read, step recorded, no gradient)',
    },
    idle,
    runs,
    /** [seconds since start, worker VmRSS MiB, rollouts in flight (null between runs)], one per second. */
    timeline: timeline(samples),
  });
}

/** One sample per second: the highest RSS and rollouts in flight of that second. */
function timeline(samples: readonly Sample[]): Array<[number, number, number | null]> {
  const bySecond = new Map<number, [number, number, number | null]>();
  for (const s of samples) {
    const second = Math.floor(s.t);
    const seen = bySecond.get(second);
    const rss = Math.round(s.rssKiB / 102.4) / 10;
    const inFlight = s.inFlight ?? null;
    bySecond.set(
      second,
      seen
        ? [second, Math.max(seen[1], rss), inFlight === null ? seen[2] : Math.max(seen[2] ?? 0, inFlight)]
        : [second, rss, inFlight],
    );
  }
  return [...bySecond.values()];
}

function print(
  idle: { rssMiB: number; startupPeakMiB: number },
  runs: RunFigures[],
  totalSeconds: number,
): void {
  const f0 = (n: number) => n.toFixed(0);
  const f1 = (n: number) => n.toFixed(1);
  const pct = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '-');
  const lines: string[] = [
    `Worker memory: ${ROLLOUTS} rollouts (${TASKS} tasks x n = ${N}, ${TASKS} groups in flight), model latency ${LATENCY_MS} ms per call, ` +
      `CPU worker in its own process with ${MAX_ACTIVITIES} activity slots`,
    '',
    '| run | worker activity slots | max rollouts in flight | model requests max in flight | RSS before run MiB | peak RSS MiB (VmHWM) | peak − before MiB | RSS per in-flight rollout KiB | worker CPU s | run wall s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...runs.map((r) => {
      const grown = r.peakMiB - r.rssBeforeMiB;
      return (
        `| ${r.label} | ${MAX_ACTIVITIES} (default ${CPU_WORKER_TUNING.maxConcurrentActivityTaskExecutions}) | ${r.maxInFlight} | ${r.modelMaxInFlight} | ` +
        `${f0(r.rssBeforeMiB)} | ${f0(r.peakMiB)} | ${f0(grown)} | ${r.maxInFlight >= TARGET_IN_FLIGHT ? f0((grown * 1024) / r.maxInFlight) : '-'} | ` +
        `${f1(r.workerCpuMs / 1000)} | ${f1(r.wallMs / 1000)} |`
      );
    }),
    '',
    'Model calls: made by the activities (logical) against sent to the model server (upstream), per run of the same iteration',
    '',
    '| run | calls | logical | upstream (model server) | llm_calls rows added | saved | saved by |',
    '|---|---|---:|---:|---:|---:|---|',
  ];
  const role = (m: Record<string, number>, name: string) => m[name] ?? 0;
  let logicalAll = 0;
  let upstreamAll = 0;
  for (const r of runs) {
    const c = r.counts;
    const modelLogical = c.policyCalls + c.userCalls + c.judgeCalls;
    const modelUpstream =
      role(r.modelByRole, 'policy') + role(r.modelByRole, 'user-simulator') + role(r.modelByRole, 'judge');
    const modelPaid =
      role(c.paidByRole, 'policy') + role(c.paidByRole, 'user-simulator') + role(c.paidByRole, 'judge');
    const toolLogical = c.toolCalls - c.toolErrors;
    const toolUpstream = role(r.modelByRole, 'tool-simulator');
    const toolPaid = role(c.paidByRole, 'tool-simulator');
    logicalAll += modelLogical + toolLogical;
    upstreamAll += r.modelTotal;
    lines.push(
      `| ${r.label} | model layer: policy ${c.policyCalls} + user simulator ${c.userCalls} + judge ${c.judgeCalls} | ${modelLogical} | ${modelUpstream} | ${modelPaid} | ` +
        `${modelLogical - modelUpstream} (${pct(modelLogical - modelUpstream, modelLogical)}) | model-call cache (llm_calls) |`,
      `| ${r.label} | task-tool calls (${c.toolErrors} refused), tool mapping → tool simulator | ${toolLogical} | ${toolUpstream} | ${toolPaid} | ` +
        `${toolLogical - toolUpstream} (${pct(toolLogical - toolUpstream, toolLogical)}) | ` +
        `${toolUpstream === 0 ? 'exact mapping hits' : 'exact mapping hits or a joined simulation in flight'} (${c.mappingEntries} entries after) |`,
    );
  }
  lines.push(
    `| both | all | ${logicalAll} | ${upstreamAll} | | ${logicalAll - upstreamAll} (${pct(logicalAll - upstreamAll, logicalAll)}) | |`,
    '',
  );
  const first = runs[0]!;
  const notes = [
    `> - ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), shared with other work; the bench took ${f0(totalSeconds)} s. ` +
      `The trainer step is bench/grpo.ts's **stand-in** (no gradient).`,
    `> - Worker: \`runCpuWorker({ maxConcurrentActivities: ${MAX_ACTIVITIES} })\` of workers/cpu-worker.ts in its own Node process (the default is ${CPU_WORKER_TUNING.maxConcurrentActivityTaskExecutions} slots; ` +
      `a GRPO group takes one, its n rollouts running in its activity); idle RSS after start ${f0(idle.rssMiB)} MiB ` +
      `(VmHWM before the first run, start-up and the workflow bundle build included: ${f0(idle.startupPeakMiB)} MiB). Peak = VmHWM, reset before each run through \`/proc/<pid>/clear_refs\`` +
      `${runs.every((r) => r.peakResetOk) ? '' : ' (refused by the kernel here: the peak includes start-up)'}; the highest 250 ms VmRSS sample of the first run was ${f0(first.peakSampledMiB)} MiB. ` +
      `The worker keeps most of it after the run (V8 does not hand its heap back at once): ${f0(runs[1]?.rssBeforeMiB ?? NaN)} MiB before the 2nd run.`,
    `> - Rollouts in flight: episodes of the run opened and not yet ended, sampled every ${SAMPLE_MS} ms; the first run held ≥ ${TARGET_IN_FLIGHT} for ${f1(first.secondsAtTarget)} s. ` +
      `RSS per in-flight rollout = (peak − RSS before the run) / max in flight: everything the run added (V8 heap not yet collected included), spread over the rollouts; ` +
      `not given for a run that held fewer than ${TARGET_IN_FLIGHT} (the 2nd run's rollouts are answered from the cache without model latency, so few overlap).`,
    `> - The 2nd run is a new GrpoTraining run of the same spec on the same database (same tasks, endpoints, sampling, policy version step-0): ` +
      `its calls have the identities the 1st run paid for (endpoint, model, request, sample index, policy version) and are answered from llm_calls; ` +
      `its tool calls are exact (task, tool, arguments) matches in tool_mappings. Logical calls: policy turns, user questions and task-tool calls from episodes, one judge call per judgement.`,
  ];
  console.log([...lines, ...notes].join('\n'));
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
}
process.exit(); // everything was stopped; do not wait on a stray handle of the SDK or a pool
