/**
 * The GRPO benchmark's measurements: one iteration at the seed's scale (histories per run), and
 * rollout throughput of the Temporal path against the plain loop at one model latency (a cell),
 * each path on a fresh database.
 */
import { closePools } from '../../activities/store/db.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { CPU_WORKER_TUNING } from '../../workers/cpu-worker.js';
import type { GrpoSummary } from '../../workflows/grpo-training.js';
import { processCpuMs } from '../measure/cpu.js';
import { activityDists, dist, largest, mergeCounts, type Dist } from '../measure/history.js';
import { rolloutPhase, scanRun } from './history.js';
import { countRows, meters, type CpuMs, type DbActivity } from '../measure/meters.js';
import { runPlain } from './plain.js';
import { BEFORE_TUNING, SETTINGS } from './settings.js';
import { runTemporal, startWorkers, type BenchContext } from './temporal.js';
import { insertKeptTasks, specFor } from './world.js';

/** Part 1: one iteration at the seed's scale, histories per run. */
export async function scaleRun(ctx: BenchContext) {
  await ctx.models.setLatency(0);
  const db: TestDatabase = await createTestDatabase('mw_bench');
  const dropDb = ctx.onCleanup(`database ${db.url}`, () => db.drop());
  const synthesisRunId = `bench-syn-scale-${ctx.nonce}`;
  const taskIds = await insertKeptTasks(db.url, synthesisRunId, SETTINGS.scaleTasks);
  const workers = await startWorkers(ctx, db.url, 'scale', SETTINGS.trainer);
  await ctx.models.reset();
  const workflowId = `bench-grpo-scale-${ctx.nonce}`;
  const spec = specFor({
    synthesisRunId,
    modelUrl: ctx.models.url,
    model: 'scale',
    tasks: SETTINGS.scaleTasks,
    groupsInFlight: 256,
    rolloutsPerTask: SETTINGS.rolloutsPerTask,
    gpuTaskQueue: workers.gpuTaskQueue,
  });
  const meter = await meters(db.url, { temporalServer: ctx.server.process.pid, modelServer: ctx.models.pid });
  const trainerCpu0 = processCpuMs(workers.pythonPid);
  const run = await runTemporal(ctx, workflowId, workers.taskQueue, spec);
  const measured = await meter();
  const trainerCpuMs = processCpuMs(workers.pythonPid) - trainerCpu0;
  const modelStats = await ctx.models.stats();
  ctx.log(
    `scale: ${SETTINGS.scaleTasks} x ${SETTINGS.rolloutsPerTask} rollouts, iteration done in ${(run.wallMs / 1000).toFixed(1)} s`,
  );
  await workers.stop();
  const rows = await countRows(db.url, workflowId);
  await dropDb();
  const { parent, children } = await scanRun(ctx.client, workflowId, run.firstRunId, taskIds);
  ctx.log('scale: histories read');
  const all = [...parent, ...children];
  const childEvents = children.map((c) => c.events);
  const phase = rolloutPhase(parent[0]!.events_);
  return {
    tasks: SETTINGS.scaleTasks,
    rolloutsPerTask: SETTINGS.rolloutsPerTask,
    rollouts: SETTINGS.scaleTasks * SETTINGS.rolloutsPerTask,
    trainer: SETTINGS.trainer,
    summary: run.summary,
    wallMs: run.wallMs,
    rolloutPhaseMs: phase.rolloutMs,
    trainerStepMs: phase.trainerStepMs,
    parent: {
      runs: parent.length,
      eventsPerRun: parent.map((p) => p.events),
      historyBytesPerRun: parent.map((p) => p.bytes),
      largestPayload: largest(parent.map((p) => p.largestPayload)),
      largestEvent: largest(parent.map((p) => p.largestEvent)),
    },
    children: {
      runs: children.length,
      eventsMin: Math.min(...childEvents),
      eventsMean: childEvents.reduce((a, b) => a + b, 0) / childEvents.length,
      eventsMax: Math.max(...childEvents),
      historyBytesMax: Math.max(...children.map((c) => c.bytes)),
      largest: children.reduce((a, b) => (b.events > a.events ? b : a)).workflowId,
      largestPayload: largest(children.map((c) => c.largestPayload)),
      largestEvent: largest(children.map((c) => c.largestEvent)),
    },
    largestPayload: largest(all.map((s) => s.largestPayload)),
    largestEvent: largest(all.map((s) => s.largestEvent)),
    activities: activityDists(children),
    cpuMs: { ...measured.cpu, trainer: trainerCpuMs },
    dbActivity: measured.db,
    loadAvg: measured.loadAvg,
    rows,
    modelCalls: modelStats.total,
    modelCallsByRole: modelStats.byRole,
    modelMaxInFlight: modelStats.maxInFlight,
  };
}

export interface PathFigures {
  readonly rollouts: number;
  /** The rollout phase: first group started → last group judged. */
  readonly rolloutMs: number;
  readonly rolloutsPerSecond: number;
  readonly cpuMs: CpuMs;
  readonly dbActivity: DbActivity;
  readonly loadAvg: { start: number; end: number };
  readonly modelCalls: number;
  readonly modelMaxInFlight: number;
  /** TCP connections the model server accepted during the run. */
  readonly modelConnections: number;
  readonly rows: Awaited<ReturnType<typeof countRows>>;
  readonly activities: Record<string, { scheduleToStartMs?: Dist; runMs: Dist }>;
}

export type TemporalFigures = PathFigures & {
  readonly worker: string;
  readonly runWallMs: number;
  readonly summary: GrpoSummary;
  readonly parentEvents: number;
  readonly childEventsMax: number;
  readonly historyEvents: number;
  readonly workflowTasks: number;
  /** Activity attempts after the first. */
  readonly retries: number;
  readonly failures: Record<string, number>;
};

/** The Temporal path at one latency on a fresh database, with the CPU worker's settings plus `tuning`. */
async function temporalPath(
  ctx: BenchContext,
  latency: number,
  tag: string,
  worker: string,
  tuning: Record<string, unknown> = {},
  tasks = SETTINGS.throughputTasks,
): Promise<TemporalFigures> {
  const rollouts = tasks * SETTINGS.rolloutsPerTask;
  const db = await createTestDatabase('mw_bench');
  const dropDb = ctx.onCleanup(`database ${db.url}`, () => db.drop());
  const synthesisRunId = `bench-syn-${tag}-${ctx.nonce}`;
  const taskIds = await insertKeptTasks(db.url, synthesisRunId, tasks);
  const workers = await startWorkers(ctx, db.url, tag, 'standin', tuning);
  await ctx.models.reset();
  const workflowId = `bench-grpo-${tag}-${ctx.nonce}`;
  const spec = specFor({
    synthesisRunId,
    modelUrl: ctx.models.url,
    model: tag,
    tasks,
    groupsInFlight: SETTINGS.groupsInFlight,
    rolloutsPerTask: SETTINGS.rolloutsPerTask,
    gpuTaskQueue: workers.gpuTaskQueue,
  });
  const meter = await meters(db.url, { temporalServer: ctx.server.process.pid, modelServer: ctx.models.pid });
  const run = await runTemporal(ctx, workflowId, workers.taskQueue, spec);
  const measured = await meter();
  const stats = await ctx.models.stats();
  await workers.stop();
  const rows = await countRows(db.url, workflowId);
  await dropDb();
  const { parent, children } = await scanRun(ctx.client, workflowId, run.firstRunId, taskIds);
  const all = [...parent, ...children];
  const phase = rolloutPhase(parent[0]!.events_);
  const figures: TemporalFigures = {
    worker,
    rollouts,
    rolloutMs: phase.rolloutMs,
    rolloutsPerSecond: rollouts / (phase.rolloutMs / 1000),
    cpuMs: measured.cpu,
    dbActivity: measured.db,
    loadAvg: measured.loadAvg,
    modelCalls: stats.total,
    modelMaxInFlight: stats.maxInFlight,
    modelConnections: stats.connections,
    rows,
    activities: activityDists(children),
    runWallMs: run.wallMs,
    summary: run.summary,
    parentEvents: parent[0]!.events,
    childEventsMax: Math.max(...children.map((c) => c.events)),
    historyEvents: all.reduce((n, h) => n + h.events, 0),
    workflowTasks: all.reduce((n, h) => n + h.workflowTasks, 0),
    retries: all.reduce((n, h) => n + h.retries, 0),
    failures: mergeCounts(all.map((h) => h.failures)),
  };
  ctx.log(
    `latency ${latency} ms: Temporal (${worker}) ${rollouts} rollouts in ${(phase.rolloutMs / 1000).toFixed(1)} s ` +
      `(run ${(run.wallMs / 1000).toFixed(1)} s), ${figures.retries} activity retries, ` +
      `failed/timed-out tasks: ${JSON.stringify(figures.failures)}`,
  );
  return figures;
}

/** The plain loop at one latency on a fresh database. */
async function plainPath(
  ctx: BenchContext,
  latency: number,
  tasks = SETTINGS.throughputTasks,
): Promise<PathFigures> {
  const rollouts = tasks * SETTINGS.rolloutsPerTask;
  const db = await createTestDatabase('mw_bench');
  const dropDb = ctx.onCleanup(`database ${db.url}`, () => db.drop());
  const synthesisRunId = `bench-syn-p${latency}-${ctx.nonce}`;
  await insertKeptTasks(db.url, synthesisRunId, tasks);
  await ctx.models.reset();
  const runId = `bench-plain-p${latency}-${ctx.nonce}`;
  const spec = specFor({
    synthesisRunId,
    modelUrl: ctx.models.url,
    model: `p${latency}`,
    tasks,
    groupsInFlight: SETTINGS.groupsInFlight,
    rolloutsPerTask: SETTINGS.rolloutsPerTask,
    gpuTaskQueue: 'unused',
  });
  const meter = await meters(db.url, { modelServer: ctx.models.pid });
  const plain = await runPlain(db.url, runId, spec);
  const measured = await meter();
  const stats = await ctx.models.stats();
  const rows = await countRows(db.url, runId);
  await closePools();
  await dropDb();
  ctx.log(`latency ${latency} ms: plain ${rollouts} rollouts in ${(plain.rolloutMs / 1000).toFixed(1)} s`);
  return {
    rollouts,
    rolloutMs: plain.rolloutMs,
    rolloutsPerSecond: rollouts / (plain.rolloutMs / 1000),
    cpuMs: measured.cpu,
    dbActivity: measured.db,
    loadAvg: measured.loadAvg,
    modelCalls: stats.total,
    modelMaxInFlight: stats.maxInFlight,
    modelConnections: stats.connections,
    rows,
    activities: {
      runJudgedRolloutGroup: { runMs: dist(plain.timings.runJudgedRolloutGroup) },
    },
  };
}

const TUNED_WORKER = `eager ≤ ${CPU_WORKER_TUNING.maxEagerActivityReservationsPerWorkflowTask}`;
const BEFORE_WORKER = `before: eager ≤ ${BEFORE_TUNING.maxEagerActivityReservationsPerWorkflowTask}`;

/**
 * Part 2 at one latency: the Temporal path with the CPU worker's settings, the plain loop, and
 * (at SETTINGS.beforeLatenciesMs) the Temporal path with the settings before the tuning; each on a fresh
 * database.
 */
export async function throughputCell(ctx: BenchContext, latency: number) {
  await ctx.models.setLatency(latency);
  const temporal = await temporalPath(ctx, latency, `t${latency}`, TUNED_WORKER);
  const plain = await plainPath(ctx, latency);
  const before = SETTINGS.beforeLatenciesMs.includes(latency)
    ? await temporalPath(ctx, latency, `b${latency}`, BEFORE_WORKER, BEFORE_TUNING)
    : undefined;
  return {
    upstreamLatencyMs: latency,
    concurrentRollouts: SETTINGS.groupsInFlight * SETTINGS.rolloutsPerTask,
    temporal,
    plain,
    ratio: temporal.rolloutsPerSecond / plain.rolloutsPerSecond,
    ...(before ? { before, beforeRatio: before.rolloutsPerSecond / plain.rolloutsPerSecond } : {}),
  };
}

/**
 * An unmeasured small pass of both paths first: whichever path ran first would otherwise pay the
 * JIT warm-up of the code both share (activities, pg, openai) and the dev server's own.
 */
export async function warmUp(ctx: BenchContext, latency: number) {
  await ctx.models.setLatency(latency);
  await temporalPath(ctx, latency, `w${latency}`, TUNED_WORKER, {}, SETTINGS.warmupTasks);
  await plainPath(ctx, latency, SETTINGS.warmupTasks);
}

export type ScaleFigures = Awaited<ReturnType<typeof scaleRun>>;
export type ThroughputCell = Awaited<ReturnType<typeof throughputCell>>;
