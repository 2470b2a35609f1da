/**
 * Goodput under faults: rollouts per wall second of one GRPO iteration while the process doing the
 * rollouts is SIGKILLed every K seconds (30 s, and a longer interval) and restarted at once, as a
 * supervisor restarts a crashed process.
 *
 * - Temporal: one `GrpoTraining` iteration (the real workflows and activities) with the CPU worker
 *   (`workers/cpu-worker.ts`, started by testkit/worker-process.ts as `mockworld worker` starts it) in
 *   its own OS process. Each kill loses the worker's in-flight activity attempts; the restarted worker
 *   fails them as WorkerProcessLost before it polls (attempt journal), so the server retries them at
 *   once instead of after their heartbeat timeout; the retry resumes each episode from its
 *   last stored turn and finds every answer already paid for in `llm_calls`. Goodput = rollouts of the
 *   iteration / wall s from the workflow's start to its result (rollouts judged, trainer batch built,
 *   the stand-in trainer step applied). The first worker is polling before the clock starts; every
 *   restart after a kill is inside the clock.
 * - Plain: the same rollouts by the in-process loop of bench/grpo/plain.ts (the same activities, in
 *   the same order and concurrency) in a child process (bench/goodput/plain-child.ts) that is
 *   SIGKILLed on the same schedule and restarted at once. A plain loop keeps no durable ledger, so
 *   a restarted attempt starts its iteration over: before each restart the bench empties what the
 *   killed attempt left in PostgreSQL (episodes, judgements, the model-call cache llm_calls, the
 *   tool mapping), so the new attempt re-runs and re-pays every model call, as an in-process trainer
 *   loop whose rollouts live in memory does. Goodput = rollouts of the iteration / wall s from the
 *   first attempt's start (modules loaded) until an attempt completes the whole iteration; 0 when
 *   none does before the cap (then the ratio is given as a lower bound: cap / Temporal's wall).
 *
 * Kills land at t0 + phase·K, t0 + (phase+1)·K, … (phase 0.5 by default: the expected phase of a
 * fault process of period K that knows nothing of the job's start), the same schedule for both paths.
 * Both run against the GRPO benchmark's scripted model server (bench/grpo/world.ts, every role,
 * fixed latency per call) in a child process; the trainer step is bench/grpo.ts's stand-in (in this
 * process, never killed; no gradient).
 *
 * Afterwards each Temporal run is audited as bench/chaos.ts audits its runs: episodes and judgements
 * exactly once per rollout (none lost, none twice), and no model answer paid twice (answers the
 * model server delivered in full, per role, against `llm_calls` rows).
 *
 * Run: `npx tsx bench/goodput.ts` (about 12–14 min at the defaults on 2 cores; 8.5 min with 32 tasks). Prints Markdown
 * tables and notes, writes bench/results/goodput.json. Knobs (environment): BENCH_GOODPUT_TASKS
 * (48: the plain loop's iteration then takes ~50 s, so a 30 s window can never hold it), BENCH_GOODPUT_N
 * (8), BENCH_GOODPUT_GROUPS_IN_FLIGHT (4: × n = 32 rollouts in flight), BENCH_GOODPUT_LATENCY_MS
 * (500 per model call), BENCH_GOODPUT_INTERVALS_S ("30,auto": `auto` is an interval at which the
 * plain loop can finish, from its pace at the interval before; see autoInterval),
 * BENCH_GOODPUT_PHASE (0.5), BENCH_GOODPUT_PLAIN_CAP_S ("180,360": the plain loop gets twice
 * Temporal's wall at the same interval, within these bounds), BENCH_GOODPUT_TIMEOUT_S (600 per
 * Temporal run: longer is a hang and fails the bench). Everything started here is stopped or removed
 * at the end, on failure and on SIGINT/SIGTERM too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startBenchRun, startBenchTemporal, resultWithin, type BenchTemporal } from '../testkit/bench-run.js';
import { createTestDatabase, query } from '../testkit/database.js';
import { auditModelCalls, type KillRecord, type ModelCallAudit } from '../testkit/chaos/audit.js';
import { tcpPortsOf } from '../testkit/chaos/components.js';
import { startModelServer, type ModelServer, type ModelServerStats } from '../testkit/model-server.js';
import { startWorkerProcess, type WorkerProcess } from '../testkit/worker-process.js';
import type { GrpoSummary } from '../workflows/grpo-training.js';
import { standInTrainerActivities } from './grpo/standin-trainer.js';
import { grpoScript, insertKeptTasks, specFor } from './grpo/world.js';
import { writeResults } from './measure/results.js';

const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const list = (name: string, fallback: string) =>
  (process.env[name] ?? fallback)
    .split(',')
    .filter((s) => s.trim() !== '')
    .map(Number);

const TASKS = num('BENCH_GOODPUT_TASKS', 48);
const N = num('BENCH_GOODPUT_N', 8);
const ROLLOUTS = TASKS * N;
const GROUPS_IN_FLIGHT = num('BENCH_GOODPUT_GROUPS_IN_FLIGHT', 4);
const LATENCY_MS = num('BENCH_GOODPUT_LATENCY_MS', 500);
/** Kill intervals in seconds; `auto`: long enough for the plain loop to finish (see {@link autoInterval}). */
const INTERVALS = (process.env.BENCH_GOODPUT_INTERVALS_S ?? '30,auto')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const PHASE = num('BENCH_GOODPUT_PHASE', 0.5);
const [CAP_MIN_S, CAP_MAX_S] = list('BENCH_GOODPUT_PLAIN_CAP_S', '180,360') as [number, number];
const TIMEOUT_MS = num('BENCH_GOODPUT_TIMEOUT_S', 600) * 1000;
const TARGET = 2;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// The kill schedule.

interface Kill {
  /** Seconds since the path's t0. */
  readonly at: number;
  readonly pid: number;
}

/**
 * Calls `kill` at t0 + (PHASE + j)·interval for j = 0, 1, … until stopped. `kill` does the kill
 * and the restart; a kill still in progress when stopped is waited for.
 */
function killEvery(intervalMs: number, t0: number, kill: () => Promise<number | undefined>) {
  const kills: Kill[] = [];
  let stopped = false;
  let wake = () => {};
  const loop = (async () => {
    for (let j = 0; ; j++) {
      const due = t0 + (PHASE + j) * intervalMs;
      while (!stopped && performance.now() < due)
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(1_000, due - performance.now()));
        });
      if (stopped) return;
      const at = (performance.now() - t0) / 1000;
      const pid = await kill();
      if (pid !== undefined) kills.push({ at, pid });
    }
  })();
  return {
    kills,
    async stop() {
      stopped = true;
      wake();
      await loop;
    },
  };
}

const loadAvg = () => Number(os.loadavg()[0]!.toFixed(2));

// ---------------------------------------------------------------------------------------------
// Audit: what the model server delivered against what the ledger holds, rows per rollout.

interface ModelPaid {
  /** Chat requests the model server received (every attempt, every retry). */
  readonly requests: number;
  /** Answers delivered in full: what a real endpoint bills. */
  readonly answered: number;
  /** Requests whose client died before the answer (cut at a kill): not delivered. */
  readonly abandoned: number;
  readonly answeredByRole: Record<string, number>;
}

const paidOf = (s: ModelServerStats): ModelPaid => ({
  requests: s.total,
  answered: Object.values(s.billedByRole).reduce((a, b) => a + b, 0),
  abandoned: s.abandoned,
  answeredByRole: s.billedByRole,
});

interface Audit {
  readonly episodes: number;
  readonly distinctRollouts: number;
  readonly episodesEnded: number;
  readonly judgements: number;
  readonly distinctJudged: number;
  readonly lost: number;
  readonly duplicated: number;
  /** Rows of llm_calls (answers the ledger holds). */
  readonly ledgerRows: number;
  /**
   * bench/chaos.ts's audit of the answers (testkit/chaos/audit.ts): answers delivered − ledger rows
   * per role, and which of those an answer on the wire at a kill explains. `repeats` left out.
   */
  readonly model: Omit<ModelCallAudit, 'repeats'>;
  /** Nothing lost or duplicated, and every answer paid twice explained by a kill. */
  readonly ok: boolean;
}

async function audit(
  databaseUrl: string,
  runId: string,
  models: ModelServer,
  kills: readonly KillRecord[],
): Promise<Audit> {
  const [ep] = await query<{ n: number; distinct: number; ended: number }>(
    databaseUrl,
    `SELECT count(*)::int AS n, count(DISTINCT (task_id, sample_index))::int AS distinct,
            count(*) FILTER (WHERE end_reason IS NOT NULL)::int AS ended
       FROM episodes WHERE starts_with(episode_id, $1) AND purpose = 'rollout'`,
    [`${runId}/it0/`],
  );
  const [ju] = await query<{ n: number; distinct: number }>(
    databaseUrl,
    `SELECT count(*)::int AS n, count(DISTINCT episode_id)::int AS distinct FROM judgements WHERE run_id = $1`,
    [runId],
  );
  const [ledger] = await query<{ n: number }>(databaseUrl, 'SELECT count(*)::int AS n FROM llm_calls');
  const { repeats: _, ...model } = await auditModelCalls(
    databaseUrl,
    [{ name: 'world', url: models.url, answers: models.deliveries, arrivals: models.arrivals }],
    kills,
  );
  const lost = Math.max(0, ROLLOUTS - ep!.distinct) + Math.max(0, ROLLOUTS - ju!.distinct);
  const duplicated = ep!.n - ep!.distinct + (ju!.n - ju!.distinct);
  return {
    episodes: ep!.n,
    distinctRollouts: ep!.distinct,
    episodesEnded: ep!.ended,
    judgements: ju!.n,
    distinctJudged: ju!.distinct,
    lost,
    duplicated,
    ledgerRows: ledger!.n,
    model,
    ok:
      lost === 0 &&
      duplicated === 0 &&
      ep!.n === ROLLOUTS &&
      ju!.n === ROLLOUTS &&
      model.paidTwice === model.onTheWireAtKill,
  };
}

// ---------------------------------------------------------------------------------------------
// The Temporal path.

interface Ctx extends BenchTemporal {
  readonly nonce: string;
  readonly dir: string;
  readonly models: ModelServer;
  readonly nativeConnection: NativeConnection;
  readonly log: (line: string) => void;
  readonly onCleanup: (name: string, run: () => Promise<unknown>) => () => Promise<void>;
}

interface TemporalRun {
  readonly intervalS: number;
  readonly rollouts: number;
  readonly wallS: number;
  readonly goodput: number;
  readonly kills: readonly Kill[];
  /** Seconds from each restart to the new worker polling its task queue (activity and workflow). */
  readonly restartToPollingS: number[];
  readonly summary: GrpoSummary;
  readonly model: ModelPaid;
  readonly audit: Audit;
  readonly loadAvg: { start: number; end: number };
}

/** Resolves once a worker with this pid polls both kinds of task of the queue; false when it died first. */
async function untilPolling(ctx: Ctx, taskQueue: string, worker: WorkerProcess): Promise<boolean> {
  const identity = `${worker.child.pid}@${os.hostname()}`;
  const polls = async (type: proto.temporal.api.enums.v1.TaskQueueType) =>
    (
      await ctx.connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: type,
      })
    ).pollers?.some((p) => p.identity === identity) ?? false;
  for (;;) {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) return false;
    if (
      (await polls(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY).catch(() => false)) &&
      (await polls(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW).catch(() => false))
    )
      return true;
    await sleep(250);
  }
}

async function temporalPath(ctx: Ctx, intervalS: number): Promise<TemporalRun> {
  const tag = `t${intervalS}`;
  const db = await createTestDatabase('mw_bench');
  const dropDb = ctx.onCleanup(`database ${db.url}`, () => db.drop());
  const synthesisRunId = `bench-syn-${tag}-${ctx.nonce}`;
  await insertKeptTasks(db.url, synthesisRunId, TASKS);
  const taskQueue = `bench-goodput-${ctx.nonce}-${tag}`;
  const gpuTaskQueue = `${taskQueue}-gpu`;

  // The stand-in trainer step on the GPU queue, in this process: never killed.
  const trainer = await Worker.create({
    connection: ctx.nativeConnection,
    taskQueue: gpuTaskQueue,
    activities: standInTrainerActivities(db.url, path.join(ctx.dir, `standin-checkpoints-${tag}`)),
    maxConcurrentActivityTaskExecutions: 1,
  });
  const trainerRunning = trainer.run();
  const stopTrainer = ctx.onCleanup(`stand-in trainer ${tag}`, async () => {
    if (trainer.getState() === 'RUNNING') trainer.shutdown();
    await trainerRunning.catch(() => undefined);
  });

  const env = { TEMPORAL_ADDRESS: ctx.server.address, DATABASE_URL: db.url, MOCKWORLD_TASK_QUEUE: taskQueue };
  let worker = startWorkerProcess(env);
  const stopWorker = ctx.onCleanup(`CPU worker ${tag}`, () => worker.kill());
  if (!(await untilPolling(ctx, taskQueue, worker))) throw new Error('the CPU worker exited before polling');
  ctx.log(`${tag}: CPU worker (pid ${worker.child.pid}) polling; starting GrpoTraining`);

  const spec = specFor({
    synthesisRunId,
    modelUrl: ctx.models.url,
    model: tag,
    tasks: TASKS,
    rolloutsPerTask: N,
    groupsInFlight: GROUPS_IN_FLIGHT,
    gpuTaskQueue,
  });
  ctx.models.resetStats();
  const load0 = loadAvg();
  const workflowId = `bench-goodput-${tag}-${ctx.nonce}`;
  const restarts: Array<Promise<number | undefined>> = [];
  const killRecords: KillRecord[] = [];
  const handle = await ctx.client.workflow.start('GrpoTraining', { args: [spec], taskQueue, workflowId });
  const t0 = performance.now();
  const killer = killEvery(intervalS * 1000, t0, async () => {
    const pid = worker.child.pid!;
    // As bench/chaos.ts: stopped first, so no connection opens between reading its ports and the kill.
    process.kill(pid, 'SIGSTOP');
    const record: KillRecord = { pid, at: Date.now(), ports: await tcpPortsOf(pid), process: 'cpu-worker' };
    killRecords.push(record);
    await worker.kill();
    record.diedAt = Date.now();
    worker = startWorkerProcess(env); // a supervisor restarts it at once
    const restarted = performance.now();
    const next = worker;
    restarts.push(
      untilPolling(ctx, taskQueue, next).then((up) =>
        up ? (performance.now() - restarted) / 1000 : undefined,
      ),
    );
    ctx.log(
      `${tag}: SIGKILL CPU worker ${pid} at ${((restarted - t0) / 1000).toFixed(1)} s, restarted as ${next.child.pid}`,
    );
    return pid;
  });
  let summary: GrpoSummary;
  try {
    summary = await resultWithin<GrpoSummary>(ctx, handle, TIMEOUT_MS);
  } finally {
    await killer.stop();
  }
  const wallS = (performance.now() - t0) / 1000;
  const load1 = loadAvg();
  const model = paidOf(ctx.models.stats);
  const restartToPollingS = (await Promise.all(restarts)).filter((s): s is number => s !== undefined);
  await stopWorker();
  await stopTrainer();
  const checked = await audit(db.url, workflowId, ctx.models, killRecords);
  await dropDb();
  ctx.log(
    `${tag}: ${ROLLOUTS} rollouts in ${wallS.toFixed(1)} s with ${killer.kills.length} kills; ` +
      `audit: ${checked.ok ? 'ok' : 'FAILED'} (lost ${checked.lost}, duplicated ${checked.duplicated}, ` +
      `paid twice ${checked.model.paidTwice}, of which on the wire at a kill ${checked.model.onTheWireAtKill})`,
  );
  return {
    intervalS,
    rollouts: ROLLOUTS,
    wallS,
    goodput: ROLLOUTS / wallS,
    kills: killer.kills,
    restartToPollingS,
    summary,
    model,
    audit: checked,
    loadAvg: { start: load0, end: load1 },
  };
}

// ---------------------------------------------------------------------------------------------
// The plain path.

interface Attempt {
  readonly pid: number;
  /** Seconds since t0 (the first attempt's modules loaded; so the first attempt's is 0). */
  readonly startedAt: number;
  /** When its modules were loaded and the loop began (seconds since t0); absent if killed before. */
  readonly readyAt?: number;
  readonly endedAt: number;
  readonly outcome: 'killed' | 'completed' | 'capped';
  /** Rollouts the attempt had judged when it ended: lost with it, unless it completed. */
  readonly rolloutsJudged: number;
}

interface PlainRun {
  readonly intervalS: number;
  readonly rollouts: number;
  readonly capS: number;
  readonly completed: boolean;
  readonly wallS: number;
  readonly goodput: number;
  readonly kills: readonly Kill[];
  readonly attempts: readonly Attempt[];
  /** Rollout phase of the completing attempt, by its own clock (its start-up excluded). */
  readonly completedAttemptRolloutS?: number;
  readonly model: ModelPaid;
  readonly loadAvg: { start: number; end: number };
}

/** What a killed plain loop leaves in PostgreSQL, emptied: a plain loop has no durable ledger. */
const WIPE = `TRUNCATE episodes, judgements, unjudged_rollouts, llm_calls, llm_rejections, tool_mappings CASCADE`;

async function plainPath(ctx: Ctx, intervalS: number, capS: number): Promise<PlainRun> {
  const tag = `p${intervalS}`;
  const db = await createTestDatabase('mw_bench');
  const dropDb = ctx.onCleanup(`database ${db.url}`, () => db.drop());
  const synthesisRunId = `bench-syn-${tag}-${ctx.nonce}`;
  await insertKeptTasks(db.url, synthesisRunId, TASKS);
  const runId = `bench-goodput-${tag}-${ctx.nonce}`;
  const spec = specFor({
    synthesisRunId,
    modelUrl: ctx.models.url,
    model: tag,
    tasks: TASKS,
    rolloutsPerTask: N,
    groupsInFlight: GROUPS_IN_FLIGHT,
    gpuTaskQueue: 'unused',
  });
  const payload = JSON.stringify({ databaseUrl: db.url, runId, spec });
  ctx.models.resetStats();

  let t0 = 0;
  let finished = false;
  let completedRolloutMs: number | undefined;
  let onReady = () => {};
  let onDone = () => {};
  let onFail = (_: Error) => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const done = new Promise<void>((resolve, reject) => {
    onDone = resolve;
    onFail = reject;
  });
  done.catch(() => undefined); // a failure after the race was decided must not crash the bench
  const attempts: Attempt[] = [];
  let child: ChildProcess;
  let childStartedAt = 0;
  let childReadyAt: number | undefined;
  const since = () => (t0 === 0 ? 0 : (performance.now() - t0) / 1000);
  const start = () => {
    const c = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'goodput', 'plain-child.ts')], {
      env: { ...process.env, BENCH_GOODPUT_PLAIN: payload },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child = c;
    childStartedAt = since();
    childReadyAt = undefined;
    createInterface({ input: c.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as { ready?: boolean; done?: boolean; rolloutMs?: number };
      if (msg.ready && c === child) {
        childReadyAt = since();
        onReady();
      }
      if (msg.done && !finished) {
        finished = true;
        completedRolloutMs = msg.rolloutMs;
        onDone();
      }
    });
    c.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL' && code !== 0) onFail(new Error(`plain attempt ${c.pid} exited with ${code}`));
    });
  };
  const killChild = async (c: ChildProcess) => {
    if (c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await gone;
  };
  const judgedNow = async () =>
    (
      await query<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM judgements WHERE run_id = $1', [
        runId,
      ]).catch(() => [{ n: -1 }])
    )[0]!.n;
  const stopAll = ctx.onCleanup(`plain attempts ${tag}`, () => killChild(child));

  start();
  await ready;
  t0 = performance.now();
  childStartedAt = 0;
  childReadyAt = 0;
  const load0 = loadAvg();
  const killer = killEvery(intervalS * 1000, t0, async () => {
    if (finished) return undefined;
    const victim = child;
    await killChild(victim);
    if (finished) return undefined; // it completed just before the kill: nothing to restart
    const at = since();
    const judged = await judgedNow();
    attempts.push({
      pid: victim.pid!,
      startedAt: childStartedAt,
      ...(childReadyAt !== undefined ? { readyAt: childReadyAt } : {}),
      endedAt: at,
      outcome: 'killed',
      rolloutsJudged: judged,
    });
    await query(db.url, WIPE); // no durable ledger: the next attempt starts the iteration over
    start(); // a supervisor restarts it at once
    ctx.log(
      `${tag}: SIGKILL plain loop ${victim.pid} at ${at.toFixed(1)} s (${judged} rollouts judged, lost), restarted as ${child!.pid}`,
    );
    return victim.pid!;
  });
  let capped = false;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      done,
      new Promise<void>((resolve) => (timer = setTimeout(() => ((capped = true), resolve()), capS * 1000))),
    ]);
  } finally {
    clearTimeout(timer);
    finished = true;
    await killer.stop();
  }
  const wallS = since();
  const load1 = loadAvg();
  const judged = await judgedNow();
  attempts.push({
    pid: child!.pid!,
    startedAt: childStartedAt,
    ...(childReadyAt !== undefined ? { readyAt: childReadyAt } : {}),
    endedAt: wallS,
    outcome: capped ? 'capped' : 'completed',
    rolloutsJudged: judged,
  });
  await stopAll();
  const model = paidOf(ctx.models.stats);
  await dropDb();
  ctx.log(
    `${tag}: ${capped ? `no attempt completed the iteration within the ${capS} s cap` : `iteration completed at ${wallS.toFixed(1)} s`}, ` +
      `${attempts.length} attempts, ${killer.kills.length} kills`,
  );
  return {
    intervalS,
    rollouts: ROLLOUTS,
    capS,
    completed: !capped,
    wallS,
    goodput: capped ? 0 : ROLLOUTS / wallS,
    kills: killer.kills,
    attempts,
    ...(completedRolloutMs !== undefined ? { completedAttemptRolloutS: completedRolloutMs / 1000 } : {}),
    model,
    loadAvg: { start: load0, end: load1 },
  };
}

// ---------------------------------------------------------------------------------------------

/**
 * A kill interval at which the plain loop can complete an iteration, from what it did at the
 * previous interval: an uninterrupted attempt's wall D (its start-up excluded) is measured where
 * one completed, else estimated from the killed attempts' best pace (rollouts judged per second
 * since their modules loaded); r is an attempt's start-up. K = 1.5·D + r, rounded up to 15 s, at
 * least 45 s: an attempt started right after a kill has half as long again as it needs, and the
 * first kill (at K/2 ≈ 0.75·D) still lands inside the iteration.
 */
function autoInterval(previous: PlainRun | undefined): { intervalS: number; how: string } {
  if (!previous) return { intervalS: 90, how: 'auto: no earlier plain run, 90 s' };
  const startUps = previous.attempts
    .filter((a) => a.readyAt !== undefined && a.startedAt > 0)
    .map((a) => a.readyAt! - a.startedAt);
  const r = startUps.length ? startUps.reduce((x, y) => x + y, 0) / startUps.length : 5;
  const done = previous.attempts.find((a) => a.outcome === 'completed');
  let d: number | undefined;
  let from: string;
  if (done?.readyAt !== undefined) {
    d = done.endedAt - done.readyAt;
    from = 'an uninterrupted attempt';
  } else {
    const paces = previous.attempts
      .filter((a) => a.readyAt !== undefined && a.rolloutsJudged > 0 && a.endedAt > a.readyAt)
      .map((a) => a.rolloutsJudged / (a.endedAt - a.readyAt!));
    d = paces.length ? ROLLOUTS / Math.max(...paces) : undefined;
    from = `the best pace of ${paces.length} killed attempts`;
  }
  if (d === undefined) return { intervalS: 90, how: 'auto: no plain attempt made progress, 90 s' };
  const intervalS = Math.max(45, Math.ceil((1.5 * d + r) / 15) * 15);
  return {
    intervalS,
    how: `auto: 1.5 × ${d.toFixed(1)} s (plain iteration, from ${from} at ${previous.intervalS} s) + ${r.toFixed(1)} s start-up, rounded up to 15 s`,
  };
}

interface Cell {
  readonly intervalS: number;
  /** How the interval was chosen (given, or auto and from what). */
  readonly intervalChosen: string;
  readonly temporal: TemporalRun;
  readonly plain: PlainRun;
  /** Temporal ÷ plain goodput; null when the plain loop never completed (see ratioAtLeast). */
  readonly ratio: number | null;
  /** When the plain loop never completed: its goodput was below rollouts / cap, so the ratio exceeds cap / Temporal's wall. */
  readonly ratioAtLeast?: number;
}

async function main(): Promise<void> {
  const run = await startBenchRun('goodput');
  const { startedAt, log, onCleanup, cleanupAll } = run;
  const cells: Cell[] = [];
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    // In this process (not a child as in bench/grpo.ts): its log of deliveries feeds the audit,
    // and no CPU is measured here.
    const models = await startModelServer({ script: grpoScript, log: false, logDeliveries: true });
    onCleanup('model server', () => models.close());
    models.setLatency(LATENCY_MS);
    const temporal = await startBenchTemporal(run);
    const nativeConnection = await NativeConnection.connect({ address: temporal.server.address });
    onCleanup('worker connection', () => nativeConnection.close());
    log(
      `dev server at ${temporal.server.address}, model server at ${models.url} (${LATENCY_MS} ms per call)`,
    );
    const ctx: Ctx = { ...run, ...temporal, models, nativeConnection };
    for (const wanted of INTERVALS) {
      const { intervalS, how } =
        wanted === 'auto' ? autoInterval(cells.at(-1)?.plain) : { intervalS: Number(wanted), how: 'given' };
      if (!(intervalS > 0)) throw new Error(`BENCH_GOODPUT_INTERVALS_S: bad interval ${wanted}`);
      log(`kill interval ${intervalS} s (${how})`);
      const t = await temporalPath(ctx, intervalS);
      const capS = Math.round(Math.min(CAP_MAX_S, Math.max(CAP_MIN_S, 2 * t.wallS)));
      const p = await plainPath(ctx, intervalS, capS);
      cells.push({
        intervalS,
        intervalChosen: how,
        temporal: t,
        plain: p,
        ratio: p.completed ? t.goodput / p.goodput : null,
        ...(p.completed ? {} : { ratioAtLeast: capS / t.wallS }),
      });
    }
  } finally {
    await cleanupAll();
  }
  const totalBenchSeconds = (performance.now() - startedAt) / 1000;
  const notes = print(cells, totalBenchSeconds);
  await writeResults('goodput', {
    totalBenchSeconds,
    settings: {
      tasks: TASKS,
      rolloutsPerTask: N,
      rollouts: ROLLOUTS,
      groupsInFlight: GROUPS_IN_FLIGHT,
      rolloutsInFlight: GROUPS_IN_FLIGHT * N,
      modelLatencyMs: LATENCY_MS,
      killIntervalsS: cells.map((c) => c.intervalS),
      killIntervalsWanted: INTERVALS,
      killPhase: PHASE,
      plainCapS: [CAP_MIN_S, CAP_MAX_S],
      temporalWorker: 'workers/cpu-worker.ts (runCpuWorker) in its own process, testkit/worker-process.ts',
      plainLoop:
        'bench/grpo/plain.ts runPlain in its own process (bench/goodput/plain-child.ts); state emptied on restart',
      trainer:
        'stand-in (bench/grpo/standin-trainer.ts: batch read, step recorded, no gradient), never killed',
      target: TARGET,
    },
    notes,
    cells,
  });
}

function print(cells: readonly Cell[], totalSeconds: number): string[] {
  const f1 = (n: number) => n.toFixed(1);
  const f2 = (n: number) => n.toFixed(2);
  const load = (l: { start: number; end: number }) => `${f2(l.start)} → ${f2(l.end)}`;
  const ratio = (c: Cell) =>
    c.ratio !== null ? f2(c.ratio) : `∞ (plain 0; > ${f2(c.ratioAtLeast!)} by the cap)`;
  const lines = [
    `Goodput under faults: one GRPO iteration of ${ROLLOUTS} rollouts (${TASKS} tasks × n = ${N}, ${GROUPS_IN_FLIGHT} groups = ${GROUPS_IN_FLIGHT * N} rollouts in flight), ` +
      `${LATENCY_MS} ms per model call, the rollout process SIGKILLed every K s and restarted at once`,
    '',
    '| kill every | path | wall s | kills | restarts / attempts | goodput rollouts/s | model answers paid (per rollout) | requests cut at a kill | Temporal ÷ plain | target | load avg (1 min) |',
    '|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const c of cells) {
    const t = c.temporal;
    const p = c.plain;
    const restartS = t.restartToPollingS.length
      ? `${t.kills.length} restarts, polling again after ${f1(Math.min(...t.restartToPollingS))}–${f1(Math.max(...t.restartToPollingS))} s`
      : `${t.kills.length} restarts`;
    lines.push(
      `| ${c.intervalS} s | Temporal (CPU worker process killed) | ${f1(t.wallS)} | ${t.kills.length} | ${restartS} | ${f2(t.goodput)} | ` +
        `${t.model.answered} (${f2(t.model.answered / ROLLOUTS)}) | ${t.model.abandoned} | ${ratio(c)} | ≥ ${TARGET} | ${load(t.loadAvg)} |`,
      `| ${c.intervalS} s | plain loop (process killed, iteration restarted) | ${p.completed ? f1(p.wallS) : `${f1(p.wallS)} (cap, not done)`} | ${p.kills.length} | ` +
        `${p.attempts.length} attempts${p.completed ? '' : ', none completed'} | ${f2(p.goodput)} | ${p.model.answered} (${f2(p.model.answered / ROLLOUTS)}) | ${p.model.abandoned} | | | ${load(p.loadAvg)} |`,
    );
  }
  lines.push(
    '',
    'Audit of the Temporal runs (as bench/chaos.ts audits): rows per rollout, and model answers delivered against the ledger',
    '',
    '| kill every | rollouts | episodes (distinct, ended) | judgements (distinct) | lost | duplicated | answers delivered | llm_calls rows | paid twice | of which on the wire at a kill | unexplained | verdict |',
    '|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const c of cells) {
    const a = c.temporal.audit;
    lines.push(
      `| ${c.intervalS} s | ${ROLLOUTS} | ${a.episodes} (${a.distinctRollouts}, ${a.episodesEnded}) | ${a.judgements} (${a.distinctJudged}) | ${a.lost} | ${a.duplicated} | ` +
        `${c.temporal.model.answered} | ${a.ledgerRows} | ${a.model.paidTwice} | ${a.model.onTheWireAtKill} | ${a.model.paidTwice - a.model.onTheWireAtKill} | ` +
        `${a.ok ? (a.model.paidTwice === 0 ? 'exactly once, nothing paid twice' : 'exactly once; paid twice only at kills') : 'FAILED'} |`,
    );
  }
  const plainDone = cells.map((c) => c.plain).find((p) => p.completedAttemptRolloutS !== undefined);
  const notes = [
    `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), shared with other work; the bench took ${f1(totalSeconds)} s. ` +
      `Goodput = the iteration's ${ROLLOUTS} rollouts / wall seconds until they are all done. Kills land at (${PHASE} + j) × K s after the start, the same schedule for both paths.`,
    `Temporal: GrpoTraining with the CPU worker (workers/cpu-worker.ts) in its own process; the clock runs from the workflow's start (first worker already polling) to its result, ` +
      `the stand-in trainer step (in the bench process, never killed, no gradient) included. A kill loses the worker's in-flight attempts: the restarted worker takes the dead one's slot and fails them as WorkerProcessLost before it polls (workers/attempt-recovery.ts), ` +
      `so they are retried at once rather than after their heartbeat timeout (20 s); its start-up, workflow bundle included, is inside the clock. The retries resume each episode from its last stored turn with the answers already paid for in llm_calls.`,
    `Plain: bench/grpo/plain.ts (the same activities, order and concurrency) in its own process, the clock from the first attempt's modules loaded until an attempt completes the rollouts (no trainer step: in the plain loop's favour). ` +
      `It has no durable ledger, so before each restart the bench empties what the killed attempt left (episodes, judgements, llm_calls, tool mapping): the new attempt re-runs and re-pays every model call from the start of the iteration.`,
    ...(plainDone
      ? (() => {
          const done = plainDone.attempts.find((a) => a.outcome === 'completed')!;
          const startUps = cells
            .flatMap((c) => c.plain.attempts)
            .filter((a) => a.readyAt !== undefined && a.startedAt > 0)
            .map((a) => a.readyAt! - a.startedAt);
          const r = startUps.length ? startUps.reduce((x, y) => x + y, 0) / startUps.length : NaN;
          return [
            `The plain loop's iteration took ${f1(done.endedAt - done.readyAt!)} s uninterrupted (the completing attempt at ${plainDone.intervalS} s, from its modules loaded; ` +
              `rollout phase ${f1(plainDone.completedAttemptRolloutS!)} s), and a restarted attempt spent ${f1(r)} s (mean) loading before its loop began: ` +
              `at a kill interval below their sum no window can hold an iteration, so the plain loop's goodput there is 0 however long it runs; the cap only bounds the bench's time.`,
          ];
        })()
      : []),
    ...cells
      .filter((c) => c.intervalChosen !== 'given')
      .map((c) => `Kill interval ${c.intervalS} s: ${c.intervalChosen}.`),
    `Capped plain runs: the loop gets twice Temporal's wall at the same interval (within ${CAP_MIN_S}–${CAP_MAX_S} s); had it completed just at the cap, the ratio would be the lower bound printed.`,
    `"requests cut at a kill": model requests whose client died while the model server was answering (not delivered, so not paid here; a real endpoint may bill the tokens it generated). ` +
      `"paid twice" (testkit/chaos/audit.ts, as bench/chaos.ts audits): answers delivered in full minus llm_calls rows, per role; one delivered to a connection of a worker that died within 1 s after, ` +
      `before the answer was written to llm_calls, is asked again by the retry: the window at-least-once delivery leaves open ("on the wire at a kill"). Any other fails the audit, as a lost or duplicated rollout does.`,
  ];
  console.log([...lines, '', ...notes.map((n) => `> ${n}`)].join('\n'));
  return notes;
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
}
process.exit(); // everything was stopped; do not wait on a stray handle of the SDK or a pool
