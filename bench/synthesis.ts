/**
 * Synthesis throughput: tasks/min of a synthesis dataset run through the real Temporal path (CLI
 * dev server started here, in-process worker with MockworldPlugin) against the same activities
 * called by a plain in-process loop (no Temporal), at 0 ms and 50 ms upstream model latency, with
 * the scripted model world of the integration tests. Also: Temporal overhead per task, model calls
 * saved by exact tool-mapping hits, history sizes and the largest payload.
 *
 * Run: `npx tsx bench/synthesis.ts`. Prints Markdown tables, writes bench/results/synthesis.json.
 * Knobs (environment): BENCH_TASKS (default 96: about 2 min on 2 idle cores, 4 when other work
 * shares them; 128 takes 2.5 to 4.5 min), BENCH_CONCURRENCY (default 64), BENCH_LATENCIES ("0,50").
 * The model server runs in a child process so its CPU does not count as the pipeline's.
 * Everything started here (dev server, model server, databases, temp dir) is stopped or removed
 * at the end, on failure and on SIGINT/SIGTERM too.
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { parseSpecOfKind } from '../schemas/specs.js';
import { createTestDatabase, type TestDatabase } from '../testkit/database.js';
import type { ModelServerStats } from '../testkit/model-server.js';
import { scriptedOutcome, scriptedPersonas, synthesisScript } from '../testkit/synthesis-script.js';
import { CPU_WORKER_TUNING } from '../workers/cpu-worker.js';
import { MOCKWORLD_WORKFLOWS_PATH, MockworldPlugin } from '../workers/plugin.js';
import type { SynthesisSummary } from '../workflows/synthesis.js';
import { taskIdOf, type SynthesisTaskResult } from '../workflows/synthesis-task.js';
import { resultWithin, startBenchRun, startBenchTemporal } from '../testkit/bench-run.js';
import { serveOrRun, spawnModelServer, type ModelServerProcess } from '../testkit/model-server-process.js';
import { processCpuMs } from './measure/cpu.js';
import { largest, scanAll, scanChain, type Largest } from './measure/history.js';
import { plainActivityRunner } from './measure/plain-activity.js';
import { writeResults } from './measure/results.js';

const LATENCIES_MS = (process.env.BENCH_LATENCIES ?? '0,50').split(',').map(Number);
const TASKS = Number(process.env.BENCH_TASKS ?? 96);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const DEMONSTRATIONS = 2;
const MAX_TURNS = 6;
/**
 * In-flight model requests per endpoint and worker: raised from the default 32 so the model
 * limiter is not what bounds either path (64 tasks x 2 demonstrations can have 128 calls out).
 */
const MODEL_MAX_CONCURRENCY = 256;
/** A run that takes longer than this is a hang: it is terminated and the bench fails. */
const RUN_TIMEOUT_MS = 300_000;

// ---------------------------------------------------------------------------------------------
// Model server in a child process, driven by JSON lines on stdin/stdout.

/** The scripted world's model server in a child process (testkit/model-server-process.ts). */
function startModelServerProcess(): Promise<ModelServerProcess> {
  return spawnModelServer(fileURLToPath(import.meta.url));
}

// ---------------------------------------------------------------------------------------------
// Measurements.

/** CPU used by each of our processes during one path's run, in ms. */
interface CpuMs {
  /** This process: the worker and its activities (Temporal path) or the plain loop, plus the client. */
  readonly bench: number;
  /** The Temporal dev server (0 for the plain path, which does not use it). */
  readonly temporalServer: number;
  /** The model server child (scripted answers; the same work on both paths). */
  readonly modelServer: number;
}

function cpuMeter(pids: { temporalServer?: number; modelServer: number }) {
  const own0 = process.cpuUsage();
  const server0 = processCpuMs(pids.temporalServer);
  const model0 = processCpuMs(pids.modelServer);
  return (): CpuMs => {
    const own = process.cpuUsage(own0);
    return {
      bench: (own.user + own.system) / 1000,
      temporalServer: pids.temporalServer ? processCpuMs(pids.temporalServer) - server0 : 0,
      modelServer: processCpuMs(pids.modelServer) - model0,
    };
  };
}

interface DbCounts {
  readonly tasks: Record<string, number>;
  readonly episodes: number;
  /** Task-tool calls made by agents (sum of episodes.tool_calls; ask_user not included). */
  readonly toolCalls: number;
  /** Of those, calls refused by validation (answered with an error, no simulator). */
  readonly toolErrors: number;
  /** Paid tool-simulator model calls (llm_calls rows with role 'tool-simulator'). */
  readonly simulatorCalls: number;
  /** Distinct (task, tool, args) entries in tool_mappings. */
  readonly mappingEntries: number;
  /** Every paid model call (llm_calls rows), by role. */
  readonly llmCallsByRole: Record<string, number>;
  readonly llmCalls: number;
}

interface PathResult {
  readonly wallMs: number;
  readonly tasksPerMin: number;
  /** CPU per process during the run (all tasks), in ms. */
  readonly cpuMs: CpuMs;
  /** 1-minute load average when the path started and ended (other work on the machine shows here). */
  readonly loadAvgAtStart: number;
  readonly loadAvgAtEnd: number;
  readonly outcome: { kept: number; rejected: number; failed: number };
  readonly db: DbCounts;
  /** Chat requests the model server received during this path's run. */
  readonly modelServerRequests: number;
  readonly modelServerMaxInFlight: number;
  /** Tool calls answered from tool_mappings (or a shared in-flight simulation) without a model call. */
  readonly toolCallsWithoutModelCall: number;
  readonly savedFraction: number;
}

interface HistoryFigures {
  readonly dataset: {
    readonly runs: number;
    readonly eventsPerRun: number[];
    readonly eventsSum: number;
    readonly eventsMaxPerRun: number;
    readonly historyBytesMaxPerRun: number;
  };
  readonly oneTask: {
    readonly workflowId: string;
    readonly outcome: string;
    readonly events: number;
    readonly historyBytes: number;
  };
  readonly allTasks: {
    readonly count: number;
    readonly eventsMin: number;
    readonly eventsMax: number;
    readonly eventsMean: number;
  };
  /** Largest single Payload (encoded temporal.api.common.v1.Payload) in any event of these histories. */
  readonly largestPayload: Largest;
  /** Largest event (encoded HistoryEvent), payloads and all. */
  readonly largestEvent: Largest;
}

interface Cell {
  readonly upstreamLatencyMs: number;
  readonly temporal: PathResult & { readonly history: HistoryFigures; readonly summary: SynthesisSummary };
  readonly plain: PathResult;
  readonly temporalOverheadMsPerTask: number;
  /** (Temporal path CPU of bench + dev server − plain path CPU of bench) / tasks, in ms. */
  readonly temporalCpuOverheadMsPerTask: number;
}

async function countDb(url: string): Promise<DbCounts> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const one = async (text: string) => Number(Object.values((await sql.query(text)).rows[0] ?? {})[0] ?? 0);
    const tasks = Object.fromEntries(
      (await sql.query('SELECT stage, count(*)::int AS n FROM tasks GROUP BY 1 ORDER BY 1')).rows.map((r) => [
        r.stage,
        r.n,
      ]),
    );
    const byRole = Object.fromEntries(
      (
        await sql.query(
          `SELECT coalesce(role, '(none)') AS role, count(*)::int AS n FROM llm_calls GROUP BY 1 ORDER BY 1`,
        )
      ).rows.map((r) => [r.role, r.n]),
    );
    return {
      tasks,
      episodes: await one('SELECT count(*)::int FROM episodes'),
      toolCalls: await one('SELECT coalesce(sum(tool_calls), 0)::int FROM episodes'),
      toolErrors: await one('SELECT coalesce(sum(tool_errors), 0)::int FROM episodes'),
      simulatorCalls: await one(`SELECT count(*)::int FROM llm_calls WHERE role = 'tool-simulator'`),
      mappingEntries: await one('SELECT count(*)::int FROM tool_mappings'),
      llmCallsByRole: byRole,
      llmCalls: await one('SELECT count(*)::int FROM llm_calls'),
    };
  } finally {
    await sql.end();
  }
}

function pathResult(
  wallMs: number,
  cpuMs: CpuMs,
  load: { start: number; end: number },
  outcome: PathResult['outcome'],
  db: DbCounts,
  stats: ModelServerStats,
): PathResult {
  const simulable = db.toolCalls - db.toolErrors;
  const saved = simulable - db.simulatorCalls;
  return {
    wallMs,
    tasksPerMin: TASKS / (wallMs / 60_000),
    cpuMs,
    loadAvgAtStart: load.start,
    loadAvgAtEnd: load.end,
    outcome,
    db,
    modelServerRequests: stats.total,
    modelServerMaxInFlight: stats.maxInFlight,
    toolCallsWithoutModelCall: saved,
    savedFraction: simulable > 0 ? saved / simulable : 0,
  };
}

function specFor(personasPath: string, modelUrl: string, model: string) {
  const role = { endpoint: { baseUrl: modelUrl, model, maxConcurrency: MODEL_MAX_CONCURRENCY } };
  return {
    kind: 'Synthesis',
    name: 'bench',
    personas: { path: personasPath },
    tasks: TASKS,
    demonstrationsPerTask: DEMONSTRATIONS,
    maxTurns: MAX_TURNS,
    coverageThreshold: 0.5,
    concurrency: CONCURRENCY,
    models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
  };
}

// ---------------------------------------------------------------------------------------------
// History inspection.

/** The dataset run's chain and every task child: sizes against the claim-check targets. */
async function historyFigures(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<HistoryFigures> {
  const scans = await scanChain(client, workflowId, firstRunId);
  const taskScans = await scanAll(
    client,
    Array.from({ length: TASKS }, (_, i) => taskIdOf(workflowId, i)),
    8,
  );
  const all = [...scans, ...taskScans];
  const taskEvents = taskScans.map((s) => s.events);
  return {
    dataset: {
      runs: scans.length,
      eventsPerRun: scans.map((s) => s.events),
      eventsSum: scans.reduce((n, s) => n + s.events, 0),
      eventsMaxPerRun: Math.max(...scans.map((s) => s.events)),
      historyBytesMaxPerRun: Math.max(...scans.map((s) => s.bytes)),
    },
    oneTask: {
      workflowId: taskIdOf(workflowId, 0),
      outcome: scriptedOutcome(0),
      events: taskScans[0]!.events,
      historyBytes: taskScans[0]!.bytes,
    },
    allTasks: {
      count: taskScans.length,
      eventsMin: Math.min(...taskEvents),
      eventsMax: Math.max(...taskEvents),
      eventsMean: taskEvents.reduce((a, b) => a + b, 0) / taskEvents.length,
    },
    largestPayload: largest(all.map((s) => s.largestPayload)),
    largestEvent: largest(all.map((s) => s.largestEvent)),
  };
}

// ---------------------------------------------------------------------------------------------
// The plain path: the same activities, the same order, no Temporal.

/** The timeouts the Synthesis workflows schedule their activities with. */
const inContext = plainActivityRunner({ heartbeatTimeoutMs: 60_000, startToCloseTimeoutMs: 3_600_000 });

/** Mirrors workflows/synthesis.ts + workflows/synthesis-task.ts step for step, minus Temporal. */
async function runPlain(databaseUrl: string, runId: string, input: ReturnType<typeof specFor>) {
  const acts = createActivities({ databaseUrl });
  type Acts = typeof acts;
  const call = <K extends keyof Acts>(name: K, ...args: Parameters<Acts[K]>): ReturnType<Acts[K]> =>
    inContext(name, acts[name] as (...a: unknown[]) => Promise<unknown>, ...args) as ReturnType<Acts[K]>;

  const spec = parseSpecOfKind('Synthesis', input);
  await call('recordRunStart', { runId, kind: 'Synthesis', spec });
  const loaded = await call('loadSynthesisPersonas', {
    runId,
    path: spec.personas.path,
    offset: spec.personas.offset,
    limit: spec.tasks,
  });

  const runTask = async (idx: number): Promise<SynthesisTaskResult> => {
    const taskId = taskIdOf(runId, idx);
    const base = {
      runId,
      taskId,
      idx,
      seed: spec.seed + idx,
      templates: spec.templates,
      taskSize: spec.taskSize,
      roles: spec.models,
    };
    const prepared = await call('prepareTask', {
      ...base,
      teacher: spec.models.teacher,
      refine: spec.refine,
    });
    if (!prepared.ok) return { outcome: 'rejected', reason: prepared.reason };
    const episodeIds = await call('runDemonstrations', {
      taskId,
      count: spec.demonstrationsPerTask,
      maxTurns: spec.maxTurns,
      models: spec.models,
      templates: spec.templates,
      world: spec.world,
    });
    const finished = await call('finishTask', {
      ...base,
      rubricExtractor: spec.models.rubricExtractor,
      coverageJudge: spec.models.coverageJudge,
      coverageThreshold: spec.coverageThreshold,
      episodeIds,
      templateIds: prepared.templateIds,
    });
    if (!finished.ok) return { outcome: 'rejected', reason: finished.reason };
    return { outcome: 'kept', keptDemonstrations: finished.facts?.['keptDemonstrations'] ?? 0 };
  };

  const tally = { kept: 0, rejected: 0, failed: 0 };
  const errors: string[] = [];
  let cursor = 0;
  await Promise.all(
    Array.from({ length: Math.min(spec.concurrency, loaded.loaded) }, async () => {
      while (cursor < loaded.loaded) {
        const idx = cursor++;
        try {
          tally[(await runTask(idx)).outcome]++;
        } catch (error) {
          tally.failed++;
          errors.push(`task ${idx}: ${(error as Error).message}`);
        }
      }
    }),
  );
  await call('finishSynthesis', { runId });
  if (errors.length) console.error(`plain path: ${errors.length} task(s) failed, first: ${errors[0]}`);
  return tally;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const run = await startBenchRun('synthesis');
  const { startedAt, dir, nonce, log, onCleanup, cleanupAll } = run;
  const cells: Cell[] = [];
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const personasPath = path.join(dir, 'personas.jsonl');
    await writeFile(personasPath, scriptedPersonas(TASKS, false));

    const models = await startModelServerProcess();
    onCleanup('model server', () => models.stop());

    const temporal = await startBenchTemporal(run);
    const { server, client } = temporal;
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    onCleanup('worker connection', () => nativeConnection.close());
    log(`dev server at ${server.address}, model server at ${models.url}`);

    // One bundle for every worker (the plugin's workflows); each run gets a fresh worker+database.
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      logger: new DefaultLogger('WARN'),
    });
    log('workflow bundle built');

    for (const latency of LATENCIES_MS) {
      await models.setLatency(latency);

      // 1. The real Temporal path.
      const tdb: TestDatabase = await createTestDatabase('mw_bench');
      const dropTdb = onCleanup(`database ${tdb.url}`, () => tdb.drop());
      const taskQueue = `bench-${nonce}-${latency}`;
      const worker = await Worker.create({
        connection: nativeConnection,
        taskQueue,
        workflowBundle,
        plugins: [new MockworldPlugin({ databaseUrl: tdb.url })],
        ...CPU_WORKER_TUNING,
      });
      const running = worker.run();
      const stopWorker = onCleanup(`worker ${taskQueue}`, async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running.catch(() => undefined);
      });
      while (worker.getState() !== 'RUNNING') await new Promise((resolve) => setTimeout(resolve, 20));
      await models.reset();
      const workflowId = `bench-synthesis-${nonce}-t${latency}`;
      const temporalLoad = os.loadavg()[0]!;
      const temporalCpu = cpuMeter({ temporalServer: server.process.pid, modelServer: models.pid });
      const t0 = performance.now();
      const handle = await client.workflow.start('Synthesis', {
        args: [specFor(personasPath, models.url, `scripted-t${latency}`)],
        taskQueue,
        workflowId,
      });
      const summary = await resultWithin<SynthesisSummary>(temporal, handle, RUN_TIMEOUT_MS);
      const temporalWall = performance.now() - t0;
      const temporalCpuMs = temporalCpu();
      const temporalLoadEnd = os.loadavg()[0]!;
      const temporalStats = await models.stats();
      log(`latency ${latency} ms: Temporal ${TASKS} tasks in ${(temporalWall / 1000).toFixed(1)} s`);
      await stopWorker();
      const temporalDb = await countDb(tdb.url);
      await dropTdb();
      const history = await historyFigures(client, workflowId, handle.firstExecutionRunId);
      log(`latency ${latency} ms: histories read`);

      // 2. The plain loop, on a fresh database (and a different model name, so no cache is shared).
      const pdb = await createTestDatabase('mw_bench');
      const dropPdb = onCleanup(`database ${pdb.url}`, () => pdb.drop());
      await models.reset();
      const plainLoad = os.loadavg()[0]!;
      const plainCpu = cpuMeter({ modelServer: models.pid });
      const p0 = performance.now();
      const plainTally = await runPlain(
        pdb.url,
        `bench-plain-${nonce}-p${latency}`,
        specFor(personasPath, models.url, `scripted-p${latency}`),
      );
      const plainWall = performance.now() - p0;
      const plainCpuMs = plainCpu();
      const plainLoadEnd = os.loadavg()[0]!;
      const plainStats = await models.stats();
      log(`latency ${latency} ms: plain ${TASKS} tasks in ${(plainWall / 1000).toFixed(1)} s`);
      const plainDb = await countDb(pdb.url);
      await dropPdb();

      cells.push({
        upstreamLatencyMs: latency,
        temporal: {
          ...pathResult(
            temporalWall,
            temporalCpuMs,
            { start: temporalLoad, end: temporalLoadEnd },
            { kept: summary.kept, rejected: summary.rejected, failed: summary.failed },
            temporalDb,
            temporalStats,
          ),
          history,
          summary,
        },
        plain: pathResult(
          plainWall,
          plainCpuMs,
          { start: plainLoad, end: plainLoadEnd },
          plainTally,
          plainDb,
          plainStats,
        ),
        temporalOverheadMsPerTask: (temporalWall - plainWall) / TASKS,
        temporalCpuOverheadMsPerTask:
          (temporalCpuMs.bench + temporalCpuMs.temporalServer - plainCpuMs.bench) / TASKS,
      });
    }
  } finally {
    await cleanupAll();
  }

  const f0 = (n: number) => n.toFixed(0);
  const f1 = (n: number) => n.toFixed(1);
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const perTask = (ms: number) => f1(ms / TASKS);
  const throughput = [
    `Synthesis: ${TASKS} tasks, concurrency ${CONCURRENCY}, ${DEMONSTRATIONS} demonstrations/task, scripted world, ${os.cpus().length} CPUs`,
    '',
    '| upstream latency | Temporal tasks/min | plain tasks/min | Temporal/plain | Temporal wall s | plain wall s | Temporal overhead ms/task (wall) | CPU ms/task Temporal: worker + server | CPU ms/task plain | Temporal CPU overhead ms/task | model CPU ms/task (T; plain) | load avg start→end (T; plain) | kept/rejected/failed (T; plain) | model calls (T; plain) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
    ...cells.map(
      (c) =>
        `| ${c.upstreamLatencyMs} ms | ${f0(c.temporal.tasksPerMin)} | ${f0(c.plain.tasksPerMin)} | ` +
        `${(c.temporal.tasksPerMin / c.plain.tasksPerMin).toFixed(2)} | ${f1(c.temporal.wallMs / 1000)} | ${f1(c.plain.wallMs / 1000)} | ` +
        `${f1(c.temporalOverheadMsPerTask)} | ${perTask(c.temporal.cpuMs.bench)} + ${perTask(c.temporal.cpuMs.temporalServer)} | ` +
        `${perTask(c.plain.cpuMs.bench)} | ${f1(c.temporalCpuOverheadMsPerTask)} | ` +
        `${perTask(c.temporal.cpuMs.modelServer)}; ${perTask(c.plain.cpuMs.modelServer)} | ` +
        `${c.temporal.loadAvgAtStart.toFixed(1)}→${c.temporal.loadAvgAtEnd.toFixed(1)}; ` +
        `${c.plain.loadAvgAtStart.toFixed(1)}→${c.plain.loadAvgAtEnd.toFixed(1)} | ` +
        `${c.temporal.outcome.kept}/${c.temporal.outcome.rejected}/${c.temporal.outcome.failed}; ` +
        `${c.plain.outcome.kept}/${c.plain.outcome.rejected}/${c.plain.outcome.failed} | ${c.temporal.db.llmCalls}; ${c.plain.db.llmCalls} |`,
    ),
    '',
    'Temporal overhead (wall) = (Temporal wall − plain wall) / tasks. Temporal CPU overhead = (CPU of this process',
    'and of the dev server during the Temporal run − CPU of this process during the plain run) / tasks; PostgreSQL',
    'CPU is not counted (shared server).',
  ];
  const mapping = [
    '',
    '| upstream latency | path | task-tool calls | tool errors | tool-simulator model calls | tool_mappings entries | answered without a model call | saved |',
    '|---:|---|---:|---:|---:|---:|---:|---:|',
    ...cells.flatMap((c) =>
      (['temporal', 'plain'] as const).map((which) => {
        const p = c[which];
        return (
          `| ${c.upstreamLatencyMs} ms | ${which} | ${p.db.toolCalls} | ${p.db.toolErrors} | ${p.db.simulatorCalls} | ` +
          `${p.db.mappingEntries} | ${p.toolCallsWithoutModelCall} | ${(p.savedFraction * 100).toFixed(1)}% |`
        );
      }),
    ),
    '',
    'saved = (task-tool calls − tool errors − tool-simulator model calls) / (task-tool calls − tool errors);',
    'task-tool calls = sum(episodes.tool_calls) (ask_user excluded), tool-simulator model calls = llm_calls rows with',
    "role 'tool-simulator' (each paid call is one row). A saved call was answered from tool_mappings (exact match on",
    '(task, tool, canonical args)) or by joining an identical simulation already in flight in the worker.',
  ];
  const histories = [
    '',
    '| upstream latency | dataset runs (continue-as-new) | dataset events sum / max per run | dataset history max KiB | task 0 events | task events min/mean/max | largest payload | largest event |',
    '|---:|---:|---:|---:|---:|---:|---|---|',
    ...cells.map((c) => {
      const h = c.temporal.history;
      return (
        `| ${c.upstreamLatencyMs} ms | ${h.dataset.runs} | ${h.dataset.eventsSum} / ${h.dataset.eventsMaxPerRun} | ` +
        `${(h.dataset.historyBytesMaxPerRun / 1024).toFixed(0)} | ${h.oneTask.events} | ` +
        `${h.allTasks.eventsMin}/${f1(h.allTasks.eventsMean)}/${h.allTasks.eventsMax} | ` +
        `${kb(h.largestPayload.bytes)} (${h.largestPayload.eventType}) | ${kb(h.largestEvent.bytes)} (${h.largestEvent.eventType}) |`
      );
    }),
  ];
  console.log([...throughput, ...mapping, ...histories].join('\n'));

  await writeResults('synthesis', {
    tasks: TASKS,
    concurrency: CONCURRENCY,
    demonstrationsPerTask: DEMONSTRATIONS,
    maxTurns: MAX_TURNS,
    modelMaxConcurrency: MODEL_MAX_CONCURRENCY,
    totalBenchSeconds: (performance.now() - startedAt) / 1000,
    notes: [
      'temporal: Synthesis workflow on a CLI dev server (SQLite file) started by the bench, in-process worker with MockworldPlugin and the CPU worker’s settings (CPU_WORKER_TUNING: 512 activity slots, 64 eager reservations), fresh database; wall = start → result.',
      'plain: the same activities from createActivities called in SynthesisTask order with the same concurrency, each call in a MockActivityEnvironment, fresh database; wall = recordRunStart → finishSynthesis.',
      'temporalOverheadMsPerTask = (temporal wall − plain wall) / tasks.',
      'temporalCpuOverheadMsPerTask = (CPU of the bench process + dev server during the Temporal run − CPU of the bench process during the plain run) / tasks; PostgreSQL CPU not counted.',
      'The machine may be shared: loadAvgAtStart/End (1-min, this bench included) show other load; wall figures are very sensitive to it, CPU figures less (contention also inflates CPU time).',
      'saved = (task-tool calls − tool errors − tool-simulator llm_calls rows) / (task-tool calls − tool errors).',
      'Model server: the scripted world of testkit/synthesis-script.ts in a child process; every model role answered by it.',
      'History: dataset workflow summed over its continue-as-new chain; payload = encoded temporal.api.common.v1.Payload, largest over the dataset runs and all task workflows.',
    ],
    cells,
  });
}

await serveOrRun(synthesisScript, main);
