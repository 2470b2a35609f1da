/**
 * GRPO orchestration: (1) history events and the largest payload per workflow run for one GRPO
 * iteration at the seed's scale (global batch 128 tasks x n = 16 rollouts = 2048 rollouts), on the
 * parent `GrpoTraining` run and on every `GrpoGroup` child run; (2) rollout throughput of the
 * Temporal path (the real `GrpoTraining` → `GrpoGroup` → `runJudgedRollout` workflows
 * and activities on an in-process CPU worker against a CLI dev server) against a plain in-process
 * loop calling the same activities in the same order at the same concurrency (256 rollouts in
 * flight: 16 groups of 16), at 50 ms and 0 ms model latency (the issue's target; CPU-bound on 2
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
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { closePools } from '../activities/store/db.js';
import { GrpoSpecSchema } from '../schemas/grpo-spec.js';
import type { DevServer } from '../deploy/temporal-dev-server.js';
import { createTestDatabase, type TestDatabase } from '../testkit/database.js';
import type { Reply, ScriptedRequest } from '../testkit/model-server.js';
import { startPython, type PythonProcess } from '../testkit/python-process.js';
import { CPU_WORKER_TUNING } from '../workers/cpu-worker.js';
import { MOCKWORLD_WORKFLOWS_PATH, MockworldPlugin } from '../workers/plugin.js';
import type { GrpoSummary } from '../workflows/grpo-training.js';
import { startBenchRun, startBenchTemporal } from '../testkit/bench-run.js';
import { serveModelServer, spawnModelServer, type ModelServerProcess } from '../testkit/model-server-process.js';
export type { ModelServerProcess };

const SCALE_TASKS = Number(process.env.BENCH_GRPO_SCALE_TASKS ?? 128);
const N = Number(process.env.BENCH_GRPO_N ?? 16);
const THROUGHPUT_TASKS = Number(process.env.BENCH_GRPO_TASKS ?? 32);
/** Tasks of the unmeasured first pass of both paths (JIT and connection warm-up of everything). */
const WARMUP_TASKS = Number(process.env.BENCH_GRPO_WARMUP_TASKS ?? 8);
const GROUPS_IN_FLIGHT = Number(process.env.BENCH_GRPO_GROUPS_IN_FLIGHT ?? 16);
const LATENCIES_MS = (process.env.BENCH_LATENCIES ?? '50,0,2000')
  .split(',')
  .filter((s) => s.trim() !== '')
  .map(Number);
const SKIP_SCALE = process.env.BENCH_GRPO_SKIP_SCALE === '1';
const TRAINER = process.env.BENCH_TRAINER === 'python' ? 'python' : 'standin';
/** Extra Worker options (JSON) for tuning experiments, merged over the CPU worker's (workers/cpu-worker.ts). */
const WORKER_OVERRIDES = JSON.parse(process.env.BENCH_GRPO_WORKER_OPTIONS ?? '{}') as Record<string, unknown>;
/** Latencies at which the Temporal path also runs with the worker settings before the tuning. */
const BEFORE_LATENCIES_MS = (process.env.BENCH_GRPO_BEFORE_LATENCIES ?? '50')
  .split(',')
  .filter((s) => s.trim() !== '')
  .map(Number);
/** The CPU worker's settings before bench/grpo.ts measured them: the SDK's eager reservations (3). */
const BEFORE_TUNING = { maxEagerActivityReservationsPerWorkflowTask: 3 };
/** The seed's default turn budget; the scripted policy finishes in 3 or 4 turns. */
const MAX_TURNS = 16;
/** In-flight requests per endpoint and worker: high, so the model limiter bounds neither path. */
const MODEL_MAX_CONCURRENCY = 4096;
/** A run that takes longer than this is a hang: it is terminated and the bench fails. */
const RUN_TIMEOUT_MS = Number(process.env.BENCH_GRPO_TIMEOUT_MS ?? 420_000);
/** Targets of DESIGN.md (claim-check): per workflow run. */
const TARGET_EVENTS = 10_000;
const TARGET_PAYLOAD_BYTES = 256 * 1024;
const TARGET_RATIO = 0.9;

const HERE = path.dirname(fileURLToPath(import.meta.url));

// A CommonJS package: Node's ESM loader sees only its default export (as in deploy/search-attributes.ts).
const { temporal } = proto;

// ---------------------------------------------------------------------------------------------
// The scripted world: every role answers at once (plus the server's latency), deterministically.

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'lookup_record',
      description: 'Look up a record by id',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'update_record',
      description: 'Set the status of a record',
      parameters: {
        type: 'object',
        properties: { id: { type: 'string' }, status: { type: 'string' } },
        required: ['id', 'status'],
      },
    },
  },
];
const QUESTION = 'Which record do you mean?';

function requestText(request: ScriptedRequest): string {
  return request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

/**
 * Policy: even sampling seeds (seed + sample index) ask the user first, odd ones do not; then
 * look the record up, fix it, answer (3 or 4 policy calls). Tool calls of a task are the same in
 * every rollout, so the tool simulator is called once per (task, tool, args) and the mapping
 * answers the rest. Judge: sub-goals from the tool calls in the transcript, the
 * required interaction from the question: R = 1 for an asking rollout, 0.5 otherwise, so every
 * group has reward variance.
 */
function grpoScript(request: ScriptedRequest): Reply {
  switch (request.role) {
    case 'policy': {
      const i = Number(/task-(\d+)/.exec(requestText(request))?.[1] ?? 0);
      const seed = Number(request.body.seed ?? 0);
      const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
      const steps = seed % 2 === 0 ? ['ask', 'lookup', 'update'] : ['lookup', 'update'];
      const call = (name: string, args: unknown): Reply => ({ toolCalls: [{ name, arguments: args }] });
      switch (steps[turn]) {
        case 'ask':
          return call('ask_user', { question: `${QUESTION} (sample ${seed})` });
        case 'lookup':
          return call('lookup_record', { id: `R-${i}` });
        case 'update':
          return call('update_record', { id: `R-${i}`, status: 'fixed' });
        default:
          return `Done: R-${i} is fixed (sample ${seed}).`; // every transcript differs: one judge call each
      }
    }
    case 'tool-simulator':
      return JSON.stringify({ equivalentTo: null, response: JSON.stringify({ status: 'open' }) });
    case 'user-simulator':
      return 'The record id is the one in my ticket.';
    case 'judge': {
      const text = requestText(request);
      return JSON.stringify({
        forbidden: [{ index: 0, violated: false, evidence: '' }],
        subGoals: [
          { index: 0, achieved: text.includes('agent calls lookup_record(') },
          { index: 1, achieved: text.includes('agent calls update_record(') },
        ],
        requiredInteractions: [{ index: 0, satisfied: text.includes(QUESTION) }],
      });
    }
    default:
      throw new Error(`unscripted role ${request.role}`);
  }
}

/** The scripted world's model server in a child process (testkit/model-server-process.ts). */
export function startModelServerProcess(): Promise<ModelServerProcess> {
  return spawnModelServer(fileURLToPath(import.meta.url));
}

// ---------------------------------------------------------------------------------------------
// The dataset: `count` kept tasks of a synthesis run, written as a Synthesis run leaves them.

const taskIdOf = (synthesisRunId: string, idx: number) =>
  `${synthesisRunId}-task-${String(idx).padStart(5, '0')}`;

export async function insertKeptTasks(url: string, synthesisRunId: string, count: number): Promise<string[]> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const rows = Array.from({ length: count }, (_, idx) => ({
      task_id: taskIdOf(synthesisRunId, idx),
      run_id: synthesisRunId,
      idx,
      persona_id: `p${idx}`,
      workflow: ['Find the record', 'Fix it'],
      tools: TOOLS,
      forbidden: ['Delete records'],
      instruction: `Please sort out task-${idx} for me.`,
      hidden_context: `For task-${idx}: the record id is R-${idx}.`,
      rubric: {
        forbidden: ['Delete records'],
        subGoals: ['The record is found', 'The record is fixed'],
        requiredInteractions: ['Ask which record'],
      },
    }));
    await sql.query(
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, tools, forbidden, instruction, hidden_context, rubric)
       SELECT r ->> 'task_id', r ->> 'run_id', (r ->> 'idx')::int, r ->> 'persona_id', 'kept', r -> 'workflow',
              r -> 'tools', r -> 'forbidden', r ->> 'instruction', r ->> 'hidden_context', r -> 'rubric'
         FROM jsonb_array_elements($1::jsonb) AS r`,
      [JSON.stringify(rows)],
    );
    return rows.map((r) => r.task_id);
  } finally {
    await sql.end();
  }
}

export function specFor(opts: {
  synthesisRunId: string;
  modelUrl: string;
  model: string;
  tasks: number;
  groupsInFlight: number;
  gpuTaskQueue: string;
}) {
  const endpoint = (role: string) => ({
    baseUrl: opts.modelUrl,
    model: `${opts.model}-${role}`,
    maxConcurrency: MODEL_MAX_CONCURRENCY,
  });
  return {
    kind: 'GrpoTraining',
    name: 'bench',
    dataset: { synthesisRunId: opts.synthesisRunId, heldOutTasks: 0 },
    policy: {
      base: { kind: 'tiny', seed: 0 },
      endpoint: endpoint('policy'),
      sampling: { temperature: 1, maxTokens: 64, seed: 7 },
    },
    judge: { endpoint: endpoint('judge') },
    toolSimulator: { endpoint: endpoint('tools') },
    userSimulator: { endpoint: endpoint('user') },
    globalBatch: opts.tasks,
    miniBatch: Math.min(16, opts.tasks),
    rolloutsPerTask: N,
    maxTurns: MAX_TURNS,
    epochs: 1,
    learningRate: 1e-3,
    rolloutConcurrency: opts.groupsInFlight,
    gpuTaskQueue: opts.gpuTaskQueue,
  };
}

// ---------------------------------------------------------------------------------------------
// The trainer step stand-in (see the module comment): on the GPU queue, in this process.

interface StepInput {
  readonly run_id: string;
  readonly step: number;
  readonly batch_ref: { kind: string; table?: string; run_id?: string; step?: number };
  readonly model?: Record<string, unknown>;
  readonly config?: Record<string, number>;
}

/** `trainer.grpoStep` / `trainer.saveCheckpoint` for the bench: reads the batch, records the step, no gradient. */
export function standInTrainerActivities(databaseUrl: string, checkpointDir: string) {
  const stepDir = (run: string, step: number) =>
    path.join(checkpointDir, encodeURIComponent(run), `step-${String(step).padStart(8, '0')}`);
  const latestStep = async (run: string) => {
    for (let step = 0; ; step++)
      if (!existsSync(path.join(stepDir(run, step + 1), 'record.json'))) return step;
  };
  return {
    async 'trainer.grpoStep'(input: StepInput) {
      const { run_id: runId, step } = input;
      if (input.batch_ref?.kind !== 'postgres')
        throw ApplicationFailure.nonRetryable('stand-in reads postgres batches only', 'TrainerBadRequest');
      const dir = stepDir(runId, step);
      const recordFile = path.join(dir, 'record.json');
      if (existsSync(recordFile)) {
        const record = JSON.parse(await readFile(recordFile, 'utf8'));
        return { ...record, model_path: path.join(dir, 'model'), replayed: true };
      }
      const latest = await latestStep(runId);
      if (step !== latest + 1)
        throw ApplicationFailure.nonRetryable(`apply step ${latest + 1} first`, 'TrainerStepOutOfOrder');
      Context.current().heartbeat({ phase: 'start', done: 0, total: 1 });
      const started = performance.now();
      const sql = new pg.Client({ connectionString: databaseUrl });
      await sql.connect();
      let stats: Record<string, number | null>;
      try {
        // Read the whole batch as the trainer does (every record's transcript), then summarize.
        const { rows } = await sql.query<{
          payload: { group_id: string; reward: number; messages: unknown[] };
        }>(`SELECT payload FROM trainer_batches WHERE run_id = $1 AND step = $2`, [
          input.batch_ref.run_id ?? runId,
          input.batch_ref.step ?? step,
        ]);
        if (rows.length === 0)
          throw ApplicationFailure.nonRetryable(
            `no batch rows for ${runId} step ${step}`,
            'TrainerBadRequest',
          );
        const rewards = rows.map((r) => r.payload.reward);
        const mean = rewards.reduce((s, r) => s + r, 0) / rewards.length;
        stats = {
          num_samples: rows.length,
          num_groups: new Set(rows.map((r) => r.payload.group_id)).size,
          reward_mean: mean,
          reward_std: Math.sqrt(rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / rewards.length),
          num_messages: rows.reduce((s, r) => s + r.payload.messages.length, 0),
          loss: null,
          duration_s: 0,
        };
      } finally {
        await sql.end();
      }
      stats.duration_s = Math.round(performance.now() - started) / 1000;
      const record = {
        run_id: runId,
        step,
        kind: 'grpo',
        stand_in: 'bench/grpo.ts: batch read and step recorded, no gradient computed',
        batch_ref: input.batch_ref,
        config: input.config ?? {},
        model: input.model ?? {},
        metrics: stats,
        applied_at: new Date().toISOString(),
      };
      const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
      await mkdir(tmp, { recursive: true });
      await writeFile(path.join(tmp, 'record.json'), JSON.stringify(record, null, 2));
      await rename(tmp, dir).catch(() => rm(tmp, { recursive: true, force: true })); // lost a race: theirs stands
      return { ...record, model_path: path.join(dir, 'model'), replayed: false };
    },
    async 'trainer.saveCheckpoint'(input: { run_id: string; step?: number }) {
      const step = input.step ?? (await latestStep(input.run_id));
      const dir = stepDir(input.run_id, step);
      if (!existsSync(path.join(dir, 'record.json')))
        throw ApplicationFailure.nonRetryable(`step ${step} not applied`, 'TrainerBadRequest');
      await writeFile(path.join(dir, 'pinned'), '');
      return { run_id: input.run_id, step, model_path: path.join(dir, 'model'), pinned: true };
    },
    /** The stand-in keeps no weights, so there is no model to record: the step it reports is all. */
    async 'trainer.registerRun'(input: { run_id: string }) {
      return { run_id: input.run_id, step: await latestStep(input.run_id) };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Measurements.

/** CPU time of another process in ms (utime + stime from /proc; USER_HZ = 100 on Linux). */
export function processCpuMs(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU of this process's threads in ms, by kind: the JS main thread (activities, the SDK's
 * JavaScript, the plain loop), the workflow thread(s) (workflow code in the sandbox), the Temporal
 * core threads (Rust: gRPC, protobuf, state machines), and the rest (V8 GC and compiler, libuv).
 */
function threadCpuMs(): Record<string, number> {
  const out: Record<string, number> = {};
  let tids: string[] = [];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
      const kind =
        tid === String(process.pid)
          ? 'main'
          : name.startsWith('workflow')
            ? 'workflow'
            : name.startsWith('tokio')
              ? 'core'
              : 'other';
      out[kind] = (out[kind] ?? 0) + ms;
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** CPU used during one path's run, in ms. */
interface CpuMs {
  /** This process: the worker and its activities (Temporal path) or the plain loop. */
  readonly bench: number;
  /** The Temporal dev server (0 for the plain path). */
  readonly temporalServer: number;
  /** The model server child (the same work on both paths). */
  readonly modelServer: number;
  /** PostgreSQL backends serving this path's database (sampled by pid; a backend that exited mid-run is missed). */
  readonly postgres: number;
  /** `bench` by thread kind (see {@link threadCpuMs}); threads that ended mid-run are missed. */
  readonly benchThreads: Record<string, number>;
}

interface DbActivity {
  /** Sessions (connections) opened: a pool that keeps its connections opens few. */
  readonly sessions: number;
  readonly commits: number;
  readonly inserted: number;
  readonly updated: number;
  readonly fetched: number;
}

async function dbBackendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
    database,
  ]);
  return new Map(rows.map((r) => [r.pid, processCpuMs(r.pid)]));
}

async function dbActivity(admin: pg.Client, database: string): Promise<DbActivity> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query(
    `SELECT sessions::float8 AS sessions, xact_commit::float8 AS commits, tup_inserted::float8 AS inserted, tup_updated::float8 AS updated,
            tup_fetched::float8 AS fetched FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  const r = rows[0] ?? {};
  return {
    sessions: r.sessions ?? 0,
    commits: r.commits ?? 0,
    inserted: r.inserted ?? 0,
    updated: r.updated ?? 0,
    fetched: r.fetched ?? 0,
  };
}

/** Starts CPU and database-write meters for a path; the returned function reads them. */
async function meters(dbUrl: string, pids: { temporalServer?: number; modelServer: number }) {
  const database = decodeURIComponent(new URL(dbUrl).pathname.slice(1));
  const admin = new pg.Client({ connectionString: dbUrl.replace(/\/[^/]*$/, '/postgres') });
  await admin.connect();
  const own0 = process.cpuUsage();
  const threads0 = threadCpuMs();
  const server0 = processCpuMs(pids.temporalServer);
  const model0 = processCpuMs(pids.modelServer);
  const pg0 = await dbBackendCpu(admin, database);
  const db0 = await dbActivity(admin, database);
  const load0 = os.loadavg()[0]!;
  return async () => {
    const own = process.cpuUsage(own0);
    const threads1 = threadCpuMs();
    const pg1 = await dbBackendCpu(admin, database);
    let postgres = 0;
    for (const [pid, ms] of pg1) postgres += ms - (pg0.get(pid) ?? 0);
    // pg_stat_database is updated by backends when they go idle; give them a moment.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const db1 = await dbActivity(admin, database);
    await admin.end();
    const cpu: CpuMs = {
      bench: (own.user + own.system) / 1000,
      temporalServer: pids.temporalServer ? processCpuMs(pids.temporalServer) - server0 : 0,
      modelServer: processCpuMs(pids.modelServer) - model0,
      postgres,
      benchThreads: Object.fromEntries(
        Object.entries(threads1).map(([kind, ms]) => [kind, ms - (threads0[kind] ?? 0)]),
      ),
    };
    const db: DbActivity = {
      sessions: db1.sessions - db0.sessions,
      commits: db1.commits - db0.commits,
      inserted: db1.inserted - db0.inserted,
      updated: db1.updated - db0.updated,
      fetched: db1.fetched - db0.fetched,
    };
    return { cpu, db, loadAvg: { start: load0, end: os.loadavg()[0]! } };
  };
}

async function countRows(url: string, runId: string) {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const one = async (text: string, values: unknown[] = []) =>
      Number(Object.values((await sql.query(text, values)).rows[0] ?? {})[0] ?? 0);
    return {
      episodes: await one(`SELECT count(*)::int FROM episodes WHERE end_reason IS NOT NULL`),
      judgements: await one(`SELECT count(*)::int FROM judgements WHERE run_id = $1`, [runId]),
      rewardMean: await one(`SELECT coalesce(avg(reward), 0)::float8 FROM judgements WHERE run_id = $1`, [
        runId,
      ]),
      llmCalls: await one('SELECT count(*)::int FROM llm_calls'),
    };
  } finally {
    await sql.end();
  }
}

// ---------------------------------------------------------------------------------------------
// History inspection.

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

function eventTypeName(event: HistoryEvent): string {
  const type = event.eventType ?? 0;
  return (temporal.api.enums.v1.EventType[type] ?? String(type)).replace(/^EVENT_TYPE_/, '');
}

function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

function mergeCounts(all: Array<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const counts of all) for (const [k, n] of Object.entries(counts)) out[k] = (out[k] ?? 0) + n;
  return out;
}

function eventMs(event: HistoryEvent): number {
  const t = event.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;
}

/** Every Payload inside a decoded proto object (recursively: inputs, results, headers, memos, search attributes). */
function* payloadsIn(
  value: unknown,
  seen = new Set<unknown>(),
): Generator<proto.temporal.api.common.v1.IPayload> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || seen.has(value)) return;
  seen.add(value);
  const record = value as Record<string, unknown>;
  if (record['data'] instanceof Uint8Array && 'metadata' in record) {
    yield record as proto.temporal.api.common.v1.IPayload;
    return;
  }
  for (const child of Array.isArray(value) ? value : Object.values(record)) yield* payloadsIn(child, seen);
}

interface Largest {
  readonly bytes: number;
  readonly eventType: string;
  readonly workflowId: string;
}

interface ActivityTiming {
  /** Scheduled → started (waiting in the task queue and the worker's slots), ms. */
  readonly scheduleToStartMs: number[];
  /** Started → completed (the activity itself, as the server saw it), ms. */
  readonly runMs: number[];
}

interface HistoryScan {
  readonly workflowId: string;
  readonly events: number;
  readonly bytes: number;
  readonly largestPayload: Largest;
  readonly largestEvent: Largest;
  readonly continuedAs?: string;
  readonly events_: HistoryEvent[];
  readonly activities: Record<string, ActivityTiming>;
  /** Workflow tasks completed in this run. */
  readonly workflowTasks: number;
  /** Activity attempts after the first (ACTIVITY_TASK_STARTED with attempt > 1), failures and timeouts. */
  readonly retries: number;
  /** Failed or timed-out activity and workflow tasks, by event type. */
  readonly failures: Record<string, number>;
}

async function scanHistory(client: Client, workflowId: string, runId?: string): Promise<HistoryScan> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  let largestPayload: Largest = { bytes: 0, eventType: '', workflowId };
  let largestEvent: Largest = { bytes: 0, eventType: '', workflowId };
  const scheduled = new Map<string, { type: string; at: number }>();
  const started = new Map<string, number>();
  const activities: Record<string, ActivityTiming> = {};
  for (const event of events) {
    const eventBytes = temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    if (eventBytes > largestEvent.bytes)
      largestEvent = { bytes: eventBytes, eventType: eventTypeName(event), workflowId };
    for (const payload of payloadsIn(event)) {
      const bytes = temporal.api.common.v1.Payload.encode(payload).finish().length;
      if (bytes > largestPayload.bytes)
        largestPayload = { bytes, eventType: eventTypeName(event), workflowId };
    }
    const id = String(event.eventId);
    const attrs = event.activityTaskScheduledEventAttributes;
    if (attrs) scheduled.set(id, { type: attrs.activityType?.name ?? '?', at: eventMs(event) });
    const s = event.activityTaskStartedEventAttributes;
    if (s) {
      const sched = scheduled.get(String(s.scheduledEventId));
      if (sched) {
        (activities[sched.type] ??= { scheduleToStartMs: [], runMs: [] }).scheduleToStartMs.push(
          eventMs(event) - sched.at,
        );
        started.set(String(s.scheduledEventId), eventMs(event));
      }
    }
    const c = event.activityTaskCompletedEventAttributes;
    if (c) {
      const sched = scheduled.get(String(c.scheduledEventId));
      const at = started.get(String(c.scheduledEventId));
      if (sched && at !== undefined) activities[sched.type]!.runMs.push(eventMs(event) - at);
    }
  }
  const last = events[events.length - 1];
  return {
    workflowId,
    events: events.length,
    bytes: temporal.api.history.v1.History.encode({ events }).finish().length,
    largestPayload,
    largestEvent,
    continuedAs: last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined,
    events_: events,
    activities,
    workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
    retries: events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1).length,
    failures: countBy(
      events
        .filter(
          (e) =>
            e.activityTaskFailedEventAttributes ||
            e.activityTaskTimedOutEventAttributes ||
            e.workflowTaskFailedEventAttributes ||
            e.workflowTaskTimedOutEventAttributes,
        )
        .map(eventTypeName),
    ),
  };
}

/** The parent's runs (continue-as-new chain) and every GrpoGroup child of its iteration 0. */
async function scanRun(client: Client, workflowId: string, firstRunId: string, taskIds: readonly string[]) {
  const parent: HistoryScan[] = [];
  for (let runId: string | undefined = firstRunId; runId;) {
    const scan = await scanHistory(client, workflowId, runId);
    parent.push(scan);
    runId = scan.continuedAs;
  }
  const children: HistoryScan[] = [];
  for (let i = 0; i < taskIds.length; i += 16) {
    children.push(
      ...(await Promise.all(
        taskIds.slice(i, i + 16).map((taskId) => scanHistory(client, `${workflowId}-it0-${taskId}`)),
      )),
    );
  }
  return { parent, children };
}

/** Server times of the rollout phase: first child start initiated → last child completed. */
function rolloutPhase(parent: HistoryEvent[]) {
  const initiated = parent.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).map(eventMs);
  const completed = parent.filter((e) => e.childWorkflowExecutionCompletedEventAttributes).map(eventMs);
  const step = activitySpan(parent, 'trainer.grpoStep');
  return {
    rolloutMs: Math.max(...completed) - Math.min(...initiated),
    runMs: eventMs(parent[parent.length - 1]!) - eventMs(parent[0]!),
    trainerStepMs: step,
  };
}

function activitySpan(events: HistoryEvent[], type: string): number {
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);
  if (!scheduled) return 0;
  const done = events.find(
    (e) =>
      String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled.eventId),
  );
  return done ? eventMs(done) - eventMs(scheduled) : 0;
}

interface Dist {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function dist(values: number[]): Dist {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return {
    count: sorted.length,
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

function activityDists(scans: HistoryScan[]) {
  const merged: Record<string, { scheduleToStartMs: Dist; runMs: Dist }> = {};
  const types = new Set(scans.flatMap((s) => Object.keys(s.activities)));
  for (const type of types) {
    const all = scans.map((s) => s.activities[type]).filter((a): a is ActivityTiming => !!a);
    merged[type] = {
      scheduleToStartMs: dist(all.flatMap((a) => a.scheduleToStartMs)),
      runMs: dist(all.flatMap((a) => a.runMs)),
    };
  }
  return merged;
}

// ---------------------------------------------------------------------------------------------
// The plain path: the same activities, the same order and concurrency, no Temporal.

/** Runs one activity inside a fresh mock activity context (what the worker gives each attempt). */
function inContext<A extends unknown[], R>(
  name: string,
  fn: (...args: A) => Promise<R>,
  ...args: A
): Promise<R> {
  const env = new MockActivityEnvironment(
    { activityType: name, heartbeatTimeoutMs: 20_000, startToCloseTimeoutMs: 7_200_000 },
    { logger: new DefaultLogger('WARN') },
  );
  return env.run(fn, ...args);
}

/** `mapBounded` of workflows/bounded.ts without the workflow: at most `limit` in flight, in item order. */
async function mapBoundedPlain<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>) {
  let next = 0;
  const results: R[] = new Array(items.length);
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}

/**
 * Mirrors the rollout phase of workflows/grpo-training.ts + workflows/grpo-group.ts: `planIteration`,
 * then `groupsInFlight` groups at a time, each n × runJudgedRollout (rollout, then its judgement) at once.
 */
async function runPlain(databaseUrl: string, runId: string, input: ReturnType<typeof specFor>) {
  const spec = GrpoSpecSchema.parse(input); // what the workflow's validateSpec gives it
  const acts = createActivities({ databaseUrl });
  type Acts = typeof acts;
  const call = <K extends keyof Acts>(name: K, ...args: Parameters<Acts[K]>): ReturnType<Acts[K]> =>
    inContext(name, acts[name] as (...a: unknown[]) => Promise<unknown>, ...args) as ReturnType<Acts[K]>;
  const plan = await call('planIteration', {
    runId,
    synthesisRunId: spec.dataset.synthesisRunId,
    heldOutTasks: spec.dataset.heldOutTasks,
    globalBatch: spec.globalBatch,
    seed: spec.seed,
    iteration: 0,
  });
  const policyVersion = 'step-0';
  const timings = { runJudgedRollout: [] as number[] };
  const t0 = performance.now();
  await mapBoundedPlain(plan.taskIds, spec.rolloutConcurrency, (taskId) =>
    Promise.all(
      Array.from({ length: spec.rolloutsPerTask }, async (_, sampleIndex) => {
        const r0 = performance.now();
        const judged = await call('runJudgedRollout', {
          runId,
          iteration: 0,
          taskId,
          sampleIndex,
          policyVersion,
          policy: { endpoint: spec.policy.endpoint, sampling: spec.policy.sampling },
          toolSimulator: spec.toolSimulator,
          userSimulator: spec.userSimulator,
          maxTurns: spec.maxTurns,
          templates: spec.templates,
          purpose: 'rollout',
          judge: spec.judge,
        });
        timings.runJudgedRollout.push(performance.now() - r0);
        return judged.reward;
      }),
    ),
  );
  return { rolloutMs: performance.now() - t0, timings };
}

// ---------------------------------------------------------------------------------------------

export interface BenchContext {
  readonly client: Client;
  readonly connection: Connection;
  readonly nativeConnection: NativeConnection;
  readonly server: DevServer;
  readonly models: ModelServerProcess;
  readonly workflowBundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;
  readonly dir: string;
  readonly nonce: string;
  readonly pending: AbortController;
  readonly onCleanup: (name: string, run: () => Promise<unknown>) => () => Promise<void>;
  readonly log: (line: string) => void;
}

/** A CPU worker as workers/cpu-worker.ts builds it (one bundle for all), plus the trainer on the GPU queue. */
async function startWorkers(
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
    ...WORKER_OVERRIDES,
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

export async function runTemporal(
  ctx: Pick<BenchContext, 'client' | 'connection' | 'pending'>,
  workflowId: string,
  taskQueue: string,
  spec: unknown,
) {
  const handle = await ctx.client.workflow.start('GrpoTraining', { args: [spec], taskQueue, workflowId });
  let timer: NodeJS.Timeout | undefined;
  const t0 = performance.now();
  const summary = (await Promise.race([
    ctx.connection.withAbortSignal(ctx.pending.signal, () => handle.result()),
    new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Temporal run ${workflowId} exceeded ${RUN_TIMEOUT_MS} ms`)),
        RUN_TIMEOUT_MS,
      );
    }),
  ])
    .catch(async (error) => {
      // Say what it was waiting for (a failing activity shows its last failure here).
      const pending = await handle
        .describe()
        .then((d) => d.raw.pendingActivities ?? [])
        .catch(() => []);
      for (const a of pending)
        console.error(
          `pending ${a.activityType?.name}: attempt ${a.attempt}, last failure: ${a.lastFailure?.message ?? 'none'}`,
        );
      await handle.terminate('bench timeout').catch(() => undefined);
      throw error;
    })
    .finally(() => clearTimeout(timer))) as GrpoSummary;
  return { summary, wallMs: performance.now() - t0, firstRunId: handle.firstExecutionRunId };
}

/** Part 1: one iteration at the seed's scale, histories per run. */
async function scaleRun(ctx: BenchContext) {
  await ctx.models.setLatency(0);
  const db: TestDatabase = await createTestDatabase('mw_bench');
  const dropDb = ctx.onCleanup(`database ${db.url}`, () => db.drop());
  const synthesisRunId = `bench-syn-scale-${ctx.nonce}`;
  const taskIds = await insertKeptTasks(db.url, synthesisRunId, SCALE_TASKS);
  const workers = await startWorkers(ctx, db.url, 'scale', TRAINER);
  await ctx.models.reset();
  const workflowId = `bench-grpo-scale-${ctx.nonce}`;
  const spec = specFor({
    synthesisRunId,
    modelUrl: ctx.models.url,
    model: 'scale',
    tasks: SCALE_TASKS,
    groupsInFlight: 256,
    gpuTaskQueue: workers.gpuTaskQueue,
  });
  const meter = await meters(db.url, { temporalServer: ctx.server.process.pid, modelServer: ctx.models.pid });
  const trainerCpu0 = processCpuMs(workers.pythonPid);
  const run = await runTemporal(ctx, workflowId, workers.taskQueue, spec);
  const measured = await meter();
  const trainerCpuMs = processCpuMs(workers.pythonPid) - trainerCpu0;
  const modelStats = await ctx.models.stats();
  ctx.log(`scale: ${SCALE_TASKS} x ${N} rollouts, iteration done in ${(run.wallMs / 1000).toFixed(1)} s`);
  await workers.stop();
  const rows = await countRows(db.url, workflowId);
  await dropDb();
  const { parent, children } = await scanRun(ctx.client, workflowId, run.firstRunId, taskIds);
  ctx.log('scale: histories read');
  const all = [...parent, ...children];
  const max = (pick: (s: HistoryScan) => Largest) =>
    all.map(pick).reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const childEvents = children.map((c) => c.events);
  const phase = rolloutPhase(parent[0]!.events_);
  return {
    tasks: SCALE_TASKS,
    rolloutsPerTask: N,
    rollouts: SCALE_TASKS * N,
    trainer: TRAINER,
    summary: run.summary,
    wallMs: run.wallMs,
    rolloutPhaseMs: phase.rolloutMs,
    trainerStepMs: phase.trainerStepMs,
    parent: {
      runs: parent.length,
      eventsPerRun: parent.map((p) => p.events),
      historyBytesPerRun: parent.map((p) => p.bytes),
      largestPayload: parent.map((p) => p.largestPayload).reduce((a, b) => (b.bytes > a.bytes ? b : a)),
      largestEvent: parent.map((p) => p.largestEvent).reduce((a, b) => (b.bytes > a.bytes ? b : a)),
    },
    children: {
      runs: children.length,
      eventsMin: Math.min(...childEvents),
      eventsMean: childEvents.reduce((a, b) => a + b, 0) / childEvents.length,
      eventsMax: Math.max(...childEvents),
      historyBytesMax: Math.max(...children.map((c) => c.bytes)),
      largest: children.reduce((a, b) => (b.events > a.events ? b : a)).workflowId,
      largestPayload: children.map((c) => c.largestPayload).reduce((a, b) => (b.bytes > a.bytes ? b : a)),
      largestEvent: children.map((c) => c.largestEvent).reduce((a, b) => (b.bytes > a.bytes ? b : a)),
    },
    largestPayload: max((s) => s.largestPayload),
    largestEvent: max((s) => s.largestEvent),
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

interface PathFigures {
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

type TemporalFigures = PathFigures & {
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
  tasks = THROUGHPUT_TASKS,
): Promise<TemporalFigures> {
  const rollouts = tasks * N;
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
    groupsInFlight: GROUPS_IN_FLIGHT,
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
async function plainPath(ctx: BenchContext, latency: number, tasks = THROUGHPUT_TASKS): Promise<PathFigures> {
  const rollouts = tasks * N;
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
    groupsInFlight: GROUPS_IN_FLIGHT,
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
      runJudgedRollout: { runMs: dist(plain.timings.runJudgedRollout) },
    },
  };
}

const TUNED_WORKER = `eager ≤ ${CPU_WORKER_TUNING.maxEagerActivityReservationsPerWorkflowTask}`;
const BEFORE_WORKER = `before: eager ≤ ${BEFORE_TUNING.maxEagerActivityReservationsPerWorkflowTask}`;

/**
 * Part 2 at one latency: the Temporal path with the CPU worker's settings, the plain loop, and
 * (at BEFORE_LATENCIES_MS) the Temporal path with the settings before the tuning; each on a fresh
 * database.
 */
async function throughputCell(ctx: BenchContext, latency: number) {
  await ctx.models.setLatency(latency);
  const temporal = await temporalPath(ctx, latency, `t${latency}`, TUNED_WORKER);
  const plain = await plainPath(ctx, latency);
  const before = BEFORE_LATENCIES_MS.includes(latency)
    ? await temporalPath(ctx, latency, `b${latency}`, BEFORE_WORKER, BEFORE_TUNING)
    : undefined;
  return {
    upstreamLatencyMs: latency,
    concurrentRollouts: GROUPS_IN_FLIGHT * N,
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
async function warmUp(ctx: BenchContext, latency: number) {
  await ctx.models.setLatency(latency);
  await temporalPath(ctx, latency, `w${latency}`, TUNED_WORKER, {}, WARMUP_TASKS);
  await plainPath(ctx, latency, WARMUP_TASKS);
}

async function main(): Promise<void> {
  const run = await startBenchRun('grpo');
  const { startedAt, dir, nonce, log, onCleanup, cleanupAll } = run;

  let scale: Awaited<ReturnType<typeof scaleRun>> | undefined;
  const cells: Array<Awaited<ReturnType<typeof throughputCell>>> = [];
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const models = await startModelServerProcess();
    onCleanup('model server', () => models.stop());
    const { server, connection, client, pending } = await startBenchTemporal(run);
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    onCleanup('worker connection', () => nativeConnection.close());
    log(`dev server at ${server.address}, model server at ${models.url}`);
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      logger: new DefaultLogger('WARN'),
    });
    log('workflow bundle built');
    const ctx: BenchContext = {
      client,
      connection,
      nativeConnection,
      server,
      models,
      workflowBundle,
      dir,
      nonce,
      pending,
      onCleanup,
      log,
    };
    if (WARMUP_TASKS > 0 && LATENCIES_MS.length > 0) await warmUp(ctx, LATENCIES_MS[0]!);
    for (const latency of LATENCIES_MS) cells.push(await throughputCell(ctx, latency));
    if (!SKIP_SCALE) scale = await scaleRun(ctx);
  } finally {
    await cleanupAll();
  }
  print(scale, cells, (performance.now() - startedAt) / 1000);
  const out = path.join(HERE, 'results', 'grpo.json');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(
    out,
    await asProjectJson(
      JSON.stringify(
        {
          benchmark: 'grpo',
          date: new Date().toISOString(),
          node: process.version,
          cpus: os.cpus().length,
          cpuModel: os.cpus()[0]?.model,
          totalBenchSeconds: (performance.now() - startedAt) / 1000,
          settings: {
            scaleTasks: SCALE_TASKS,
            rolloutsPerTask: N,
            throughputTasks: THROUGHPUT_TASKS,
            warmupTasks: WARMUP_TASKS,
            groupsInFlight: GROUPS_IN_FLIGHT,
            maxTurns: MAX_TURNS,
            cpuWorker: { ...CPU_WORKER_TUNING, ...WORKER_OVERRIDES },
            before: BEFORE_TUNING,
            modelMaxConcurrency: MODEL_MAX_CONCURRENCY,
            trainer: TRAINER,
          },
          notes: NOTES,
          scale: scale && { ...scale },
          throughput: cells,
        },
        null,
        2,
      ) + '\n',
    ),
  );
  console.log(`\nwritten ${path.relative(process.cwd(), out)}`);
}

const NOTES = [
  "temporal: GrpoTraining on a CLI dev server (SQLite file) started by the bench; in-process CPU worker (MockworldPlugin, the CPU worker's activity slots); fresh PostgreSQL database per path and cell.",
  "trainer (standin): a TypeScript stand-in for the GPU step registered on the run's GPU queue by the bench: it reads the batch rows by batch_ref and records the step (record.json per step, in order, replay on repeat) but computes no gradient. python: the real trainer worker (CPU torch, tiny random model).",
  'plain: the same activity (createActivities: runJudgedRollout) called in GrpoGroup order with the same bounded concurrency (groups in flight x n), each call in a MockActivityEnvironment.',
  'rollout phase (temporal): server time of the first StartChildWorkflowExecutionInitiated → last ChildWorkflowExecutionCompleted in the parent history; (plain): first rollout started → last judgement stored.',
  "CPU: this process (worker or plain loop), the dev server, the model server, and the PostgreSQL backends of the path's database (by pid; WAL writer and checkpointer not counted).",
  'history: events per workflow run and largest encoded temporal.api.common.v1.Payload / HistoryEvent, over the parent run(s) and every GrpoGroup child run of the iteration.',
];

function print(
  scale: Awaited<ReturnType<typeof scaleRun>> | undefined,
  cells: Array<Awaited<ReturnType<typeof throughputCell>>>,
  totalSeconds: number,
): void {
  const f0 = (n: number) => n.toFixed(0);
  const f1 = (n: number) => n.toFixed(1);
  const f2 = (n: number) => n.toFixed(2);
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const lines: string[] = [];
  if (scale) {
    lines.push(
      `GRPO at the seed's scale: one iteration, ${scale.tasks} tasks x n = ${scale.rolloutsPerTask} = ${scale.rollouts} rollouts, all groups in flight, 0 ms model latency`,
      '',
      '| workflow run | runs | events per run | history per run | largest payload | largest event | target: < 10k events, < 256 KB payload |',
      '|---|---:|---:|---:|---|---|---|',
      `| GrpoTraining (parent) | ${scale.parent.runs} | ${scale.parent.eventsPerRun.join(', ')} | ${scale.parent.historyBytesPerRun.map(kib).join(', ')} | ` +
        `${kib(scale.parent.largestPayload.bytes)} (${scale.parent.largestPayload.eventType}) | ` +
        `${kib(scale.parent.largestEvent.bytes)} (${scale.parent.largestEvent.eventType}) | ` +
        `${Math.max(...scale.parent.eventsPerRun) < TARGET_EVENTS && scale.parent.largestPayload.bytes < TARGET_PAYLOAD_BYTES ? 'met' : 'MISSED'} |`,
      `| GrpoGroup (each child; largest) | ${scale.children.runs} | ${scale.children.eventsMin} / ${f1(scale.children.eventsMean)} / ${scale.children.eventsMax} (min / mean / max) | ${kib(scale.children.historyBytesMax)} (max) | ` +
        `${kib(scale.children.largestPayload.bytes)} (${scale.children.largestPayload.eventType}) | ` +
        `${kib(scale.children.largestEvent.bytes)} (${scale.children.largestEvent.eventType}) | ${scale.children.eventsMax < TARGET_EVENTS && scale.children.largestPayload.bytes < TARGET_PAYLOAD_BYTES ? 'met' : 'MISSED'} |`,
      '',
      '| iteration wall s | rollout phase s | rollouts/s | trainer step s | trainer | CPU s: worker + dev server + PostgreSQL + model server | PG commits / rows inserted / updated | model calls | episodes / judgements | reward mean | load avg start→end |',
      '|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
      `| ${f1(scale.wallMs / 1000)} | ${f1(scale.rolloutPhaseMs / 1000)} | ${f1(scale.rollouts / (scale.rolloutPhaseMs / 1000))} | ` +
        `${f1(scale.trainerStepMs / 1000)} | ${scale.trainer === 'standin' ? 'stand-in (no gradient)' : 'Python, CPU torch, tiny model'} | ` +
        `${f1(scale.cpuMs.bench / 1000)} + ${f1(scale.cpuMs.temporalServer / 1000)} + ${f1(scale.cpuMs.postgres / 1000)} + ${f1(scale.cpuMs.modelServer / 1000)} | ` +
        `${f0(scale.dbActivity.commits)} / ${f0(scale.dbActivity.inserted)} / ${f0(scale.dbActivity.updated)} | ${scale.modelCalls} | ` +
        `${scale.rows.episodes} / ${scale.rows.judgements} | ${f2(scale.rows.rewardMean)} | ${scale.loadAvg.start.toFixed(1)}→${scale.loadAvg.end.toFixed(1)} |`,
      '',
    );
  }
  if (cells.length) {
    type Cell = (typeof cells)[number];
    type Row = { cell: Cell; name: string; x: PathFigures; t?: TemporalFigures; ratio?: number };
    const temporalRows = (c: Cell): Row[] => [
      { cell: c, name: `Temporal (${c.temporal.worker})`, x: c.temporal, t: c.temporal, ratio: c.ratio },
      ...(c.before
        ? [{ cell: c, name: `Temporal (${c.before.worker})`, x: c.before, t: c.before, ratio: c.beforeRatio }]
        : []),
    ];
    const allRows = (c: Cell): Row[] => [...temporalRows(c), { cell: c, name: 'plain loop', x: c.plain }];
    const cpuTotal = (x: PathFigures) =>
      x.cpuMs.bench + x.cpuMs.temporalServer + x.cpuMs.postgres + x.cpuMs.modelServer;
    const load = (x: PathFigures) => `${x.loadAvg.start.toFixed(1)}→${x.loadAvg.end.toFixed(1)}`;
    lines.push(
      `Rollout throughput: ${THROUGHPUT_TASKS * N} rollouts per path (${THROUGHPUT_TASKS} tasks x n = ${N}), ` +
        `${cells[0]!.concurrentRollouts} in flight (${GROUPS_IN_FLIGHT} groups x ${N}), ${os.cpus().length} shared cores`,
      '',
      '| model latency | Temporal worker | Temporal rollouts/s | plain rollouts/s | Temporal/plain | target ≥ 0.9 | Temporal s (whole run s) | plain s | CPU ms/rollout, all processes: Temporal; plain | runJudgedRollout schedule→start p50 / p99 ms | model calls (T; plain) | load avg (T; plain) |',
      '|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
      ...cells.flatMap((c) =>
        temporalRows(c).map(({ t, ratio }) => {
          const p = c.plain;
          const wait = t!.activities['runJudgedRollout']?.scheduleToStartMs;
          return (
            `| ${c.upstreamLatencyMs} ms | ${t!.worker} | ${f1(t!.rolloutsPerSecond)} | ${f1(p.rolloutsPerSecond)} | ${f2(ratio!)} | ` +
            `${ratio! >= TARGET_RATIO ? 'met' : 'missed'} | ${f1(t!.rolloutMs / 1000)} (${f1(t!.runWallMs / 1000)}) | ${f1(p.rolloutMs / 1000)} | ` +
            `${f1(cpuTotal(t!) / t!.rollouts)}; ${f1(cpuTotal(p) / p.rollouts)} | ` +
            `${wait ? `${f0(wait.p50)} / ${f0(wait.p99)}` : '-'} | ${t!.modelCalls}; ${p.modelCalls} | ${load(t!)}; ${load(p)} |`
          );
        }),
      ),
      '',
      'Where the CPU goes, ms per rollout: this process by thread (main: JavaScript: activities, SDK, plain loop; core: the Rust core SDK; other: workflow sandbox thread, V8 GC/compiler, libuv), the dev server, the PostgreSQL backends of the run, the model server.',
      '',
      '| model latency | path | main | core | other | dev server | PostgreSQL | model server | total | history events / workflow tasks per rollout | PG commits / rows written per rollout | connections opened: model server / PostgreSQL |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...cells.flatMap((c) =>
        allRows(c).map(({ name, x, t }) => {
          const per = (ms: number | undefined) => f1((ms ?? 0) / x.rollouts);
          const th = x.cpuMs.benchThreads;
          const hist = t ? `${f1(t.historyEvents / x.rollouts)} / ${f2(t.workflowTasks / x.rollouts)}` : '-';
          return (
            `| ${c.upstreamLatencyMs} ms | ${name} | ${per(th['main'])} | ${per(th['core'])} | ${per((th['other'] ?? 0) + (th['workflow'] ?? 0))} | ` +
            `${per(x.cpuMs.temporalServer)} | ${per(x.cpuMs.postgres)} | ${per(x.cpuMs.modelServer)} | ${per(cpuTotal(x))} | ${hist} | ` +
            `${f1(x.dbActivity.commits / x.rollouts)} / ${f1((x.dbActivity.inserted + x.dbActivity.updated) / x.rollouts)} | ` +
            `${x.modelConnections} / ${x.dbActivity.sessions} |`
          );
        }),
      ),
      '',
      '| model latency | path | activity | schedule→start ms p50 / p99 | run ms p50 / p99 |',
      '|---:|---|---|---:|---:|',
      ...cells.flatMap((c) =>
        allRows(c).flatMap(({ name, x }) =>
          (['runJudgedRollout'] as const).map((activity) => {
            const a = x.activities[activity];
            return (
              `| ${c.upstreamLatencyMs} ms | ${name} | ${activity} | ` +
              `${a?.scheduleToStartMs ? `${f0(a.scheduleToStartMs.p50)} / ${f0(a.scheduleToStartMs.p99)}` : '-'} | ` +
              `${a ? `${f0(a.runMs.p50)} / ${f0(a.runMs.p99)}` : '-'} |`
            );
          }),
        ),
      ),
      '',
    );
  }
  const notes: string[] = [
    `> - ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), shared with other work: load averages are in the tables; the bench took ${f0(totalSeconds)} s.`,
  ];
  if (scale?.trainer === 'standin')
    notes.push(
      '> - The trainer step is a **stand-in** registered by the bench on the GPU queue (reads the batch by reference, records the step, computes no gradient): these figures measure the orchestration, not the trainer.',
    );
  for (const c of cells) {
    const t = c.temporal;
    const p = c.plain;
    const cpu = (x: PathFigures) =>
      (x.cpuMs.bench + x.cpuMs.temporalServer + x.cpuMs.postgres + x.cpuMs.modelServer) / x.rollouts;
    const cores = os.cpus().length;
    // Latency-bound throughput = in flight / (calls per rollout x latency); CPU-bound = cores / CPU per rollout.
    const calls = p.modelCalls / p.rollouts;
    const latencyBound = c.concurrentRollouts / ((calls * c.upstreamLatencyMs) / 1000);
    const cpuBound = (x: PathFigures) => (1000 * cores) / cpu(x);
    const breakEven = (x: PathFigures) => (c.concurrentRollouts * cpu(x)) / (cores * 1000 * calls);
    const cpuCeiling =
      latencyBound > cpuBound(t)
        ? ` On ${cores} otherwise idle cores that allows at most ${f0(cpuBound(t))} Temporal and ${f0(cpuBound(p))} plain rollouts/s ` +
          `(ratio ≤ ${f2(cpu(p) / cpu(t))}); measured ${f1(t.rolloutsPerSecond)} and ${f1(p.rolloutsPerSecond)}.`
        : '';
    notes.push(
      `> - ${c.upstreamLatencyMs} ms: Temporal/plain ${f2(c.ratio)}, ${c.ratio >= TARGET_RATIO ? 'meets' : 'misses'} the ${TARGET_RATIO} target. ` +
        `CPU per rollout, all processes: Temporal ${f0(cpu(t))} ms (dev server ${f0(t.cpuMs.temporalServer / t.rollouts)}), plain ${f0(cpu(p))} ms.${cpuCeiling}`,
    );
    if (c.upstreamLatencyMs > 0) {
      const bound =
        latencyBound > cpuBound(p)
          ? `both paths are CPU-bound here. They stop being so above about ${f2(breakEven(p))} s (plain) and ${f2(breakEven(t))} s (Temporal) per model call on ${cores} cores`
          : latencyBound > cpuBound(t)
            ? `the plain loop is bound by the model latency here, the Temporal path by CPU (above about ${f2(breakEven(t))} s per model call it is not)`
            : 'neither path is CPU-bound here: both wait on the model (and on the slowest rollout of each group), Temporal adding its dispatch latency per step (schedule→start and workflow task round trips)';
      notes.push(
        `> - ${c.upstreamLatencyMs} ms: with ${f1(calls)} model calls per rollout and ${c.concurrentRollouts} rollouts in flight, ` +
          `${c.upstreamLatencyMs} ms of model latency would allow ${f0(latencyBound)} rollouts/s: ${bound}.`,
      );
    }
    if (c.before) {
      const w = (x: TemporalFigures) => x.activities['runJudgedRollout']?.scheduleToStartMs?.p50 ?? 0;
      notes.push(
        `> - ${c.upstreamLatencyMs} ms, worker tuning (workers/cpu-worker.ts, ${t.worker} vs ${c.before.worker}): ` +
          `${f1(c.before.rolloutsPerSecond)} → ${f1(t.rolloutsPerSecond)} rollouts/s, CPU ${f0(cpu(c.before))} → ${f0(cpu(t))} ms/rollout, ` +
          `runJudgedRollout schedule→start p50 ${f0(w(c.before))} → ${f0(w(t))} ms, workflow tasks per rollout ` +
          `${f2(c.before.workflowTasks / c.before.rollouts)} → ${f2(t.workflowTasks / t.rollouts)}.`,
      );
    }
  }
  console.log([...lines, ...notes].join('\n'));
}

/** The JSON as the project's Prettier settings print it (so `npm run lint` passes), else as is. */
export async function asProjectJson(text: string): Promise<string> {
  try {
    const prettier = await import('prettier');
    const options = await prettier.resolveConfig(path.join(HERE, 'results', 'grpo.json'));
    return await prettier.format(text, { ...options, parser: 'json' });
  } catch {
    return text;
  }
}

/** Run as a script (not imported by another bench for its pieces, as bench/worker-memory.ts does). */
function isEntryPoint(): boolean {
  try {
    return (
      !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
    );
  } catch {
    return false;
  }
}

if (process.argv.includes('--serve')) await serveModelServer(grpoScript);
else if (isEntryPoint()) {
  try {
    await main();
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  }
  process.exit(); // everything was stopped; do not wait on a stray handle of the SDK or a pool
}
