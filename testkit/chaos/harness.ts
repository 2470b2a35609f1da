/**
 * Why this file is long (about 1,200 lines): it is one chaos run's timeline, start to audit; the
 * split still to do (fault injectors (a)-(d), the stack's start/stop) is described below.
 *
 * The chaos harness: a private stack (its own Temporal dev server on its own db file, its own
 * PostgreSQL instance (own data directory and port, testkit/postgres-instance.ts), scripted model
 * servers with random faults, two CPU worker processes calling them through one model gateway,
 * the Python trainer worker and policy server), a synthesis run and a GRPO run going at once, and
 * faults injected at seeded random points while they run:
 *
 *   (a) cpu-worker-kill       SIGKILL a CPU worker process, start a new one
 *   (b) trainer-kill          SIGKILL the Python trainer worker, start a new one
 *   (c) temporal-restart      SIGKILL the dev server, start it again on the same db file
 *   (d) postgres-restart      stop the harness's own postmaster (by its PID) and start it again
 *   (e) model faults          every model request has a seeded chance of 429 / 5xx / hang / broken body
 *   (f) gateway-kill          SIGKILL the model gateway with calls in flight, start it again (gateway-kill.ts)
 *   (g) slow-model            a model server answers after 5–20 s for minutes (slow-model.ts)
 *   (h) checkpoint-disk-full  the checkpoint directory's own small filesystem is full for a while
 *                             (checkpoint-disk.ts)
 *   (i) evaluation-worker-kill  SIGKILL the Python evaluation worker and its trial processes while an
 *                             Evaluation run goes on, start a new one (evaluation.ts)
 *   (j) trainer-rank-kill     SIGKILL a non-zero rank of the trainer, a torchrun group of 2 CPU ranks
 *                             with this kind; torchrun restarts the group (trainer-rank.ts)
 *
 * With (i) the workload has Evaluation runs as well (BFCL and tau2 trials through the benchmarks'
 * official code against a ground-truth replay); with (j) the trainer is a torchrun group, and (b)
 * kills the whole group (torchrun and its ranks: a node failure).
 *
 * Afterwards it audits PostgreSQL, the histories, the checkpoints and the model servers' counts
 * (audit.ts). Used by `bench/chaos.ts` (full size) and `test/integration/chaos.test.ts` (CI size).
 *
 * Nothing of the machine's is stopped, restarted or filled: not its PostgreSQL cluster, not the
 * default stack (~/.mockworld, port 7233, the `mockworld` database), not a shared disk.
 *
 * Over 400 lines (about 1,200) on purpose, for now: it is the run's one timeline (start the stack,
 * schedule faults, watch recovery, stop everything in order) and most of it is that sequence.
 * The newer kinds' injectors and audits are modules of their own (the older kinds' injectors are
 * still inline); the next split would move (a)–(d)'s injectors and the stack's start/stop
 * (components.ts holds the processes) out of the timeline.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { mulberry32 } from '../../activities/training/sampling.js';
import { registerSearchAttributes } from '../../deploy/search-attributes.js';
import { ensureTemporalCli } from '../../deploy/temporal-cli.js';
import { startCountingProxy, type CountingProxy } from '../counting-proxy.js';
import { createTestDatabase, query, type TestDatabase } from '../database.js';
import { startPostgresInstance, type PostgresInstance } from '../postgres-instance.js';
import { grpoFixtureScript, insertFixtureTasks } from '../grpo-fixture.js';
import {
  startModelServer,
  type FaultKind,
  type ModelServer,
  type ModelServerStats,
} from '../model-server.js';
import { freePort } from '../ports.js';
import { startPython } from '../python-process.js';
import { scriptedPersonas, synthesisScript } from '../synthesis-script.js';
import { startWorkerProcess } from '../worker-process.js';
import {
  auditGrpo,
  auditMappings,
  auditModelCalls,
  auditSynthesis,
  replayRuns,
  type KillRecord,
  type MappingAudit,
  type ModelCallAudit,
  type RunAudit,
  type RunRecord,
} from './audit.js';
import { diskFullInjector, mountSmallDisk, type SmallDisk } from './checkpoint-disk.js';
import {
  auditEvaluation,
  evaluationCalls,
  evaluationKillInjector,
  evaluationWorkload,
  launchEvalWorker,
  startEvaluationModels,
  type EvalKill,
  type EvalModels,
  type EvaluationCalls,
} from './evaluation.js';
import {
  launchModelGateway,
  postgresAnswers,
  sleep,
  Supervised,
  tcpPortsOf,
  TemporalServer,
  workerIdentity,
  type ProcessLife,
} from './components.js';
import { gatewayKillInjector } from './gateway-kill.js';
import { activitiesResumed, TemporalObserver, type ActivityRetry, type PendingActivity } from './observe.js';
import { explainRetry } from './retries.js';
import { slowModelInjector, type SlowModelOptions, type SlowWindow } from './slow-model.js';
import {
  GROUP_RANKS,
  groupRanks,
  launchTrainerGroup,
  rankKillInjector,
  rankZeroPid,
} from './trainer-rank.js';
import {
  FAULT_KINDS,
  type ChaosFaultKind,
  type FaultContext,
  type FaultRecord,
  type Injector,
} from './types.js';
import {
  evaluationSpec,
  FIXTURE_SYNTHESIS_RUN,
  grpoSpec,
  synthesisSpec,
  type WorkloadOptions,
} from './workload.js';

export { FAULT_KINDS, type ChaosFaultKind, type FaultRecord } from './types.js';

/** The model-server faults drawn at random: all transport-level, so none may change an outcome. */
export const DEFAULT_MODEL_FAULTS: readonly FaultKind[] = [
  'rate-limit',
  'server-error',
  'hang',
  'truncated-body',
  'malformed-body',
];

export interface ChaosOptions {
  /** Faults of each kind (a)–(d), (f)–(j) to inject. */
  readonly faultsPerKind: number;
  /** Per kind, another count than `faultsPerKind`. */
  readonly faultsOfKind?: Partial<Record<ChaosFaultKind, number>>;
  readonly seed: number;
  readonly kinds: readonly ChaosFaultKind[];
  /** Mean time between two faults of one kind (each gap uniform in 0.5–1.5 x this). */
  readonly meanGapMs: number;
  /** Time after the runs start before the first fault. */
  readonly warmupMs: number;
  /** Of the trainer kills, how many (the first ones) wait up to 60 s for a trainer step to be running. */
  readonly trainerInStepKills: number;
  /**
   * The other trainer kills wait up to 60 s for no step to be running. A kill inside a step costs
   * the step's heartbeat timeout (workflows/trainer.ts) and one of its bounded attempts, and the
   * full disks (h) already aim at steps: with every kill landing in the step that is (slowly)
   * running, the first full run spent 10 of its step's 10 attempts. Default on for that reason.
   */
  readonly trainerKillsAvoidSteps: boolean;
  /**
   * Of the rank kills (j), how many (the first ones) wait for a trainer step no rank kill has met
   * to be running (up to checkpointDisk.freshStepWaitMs in all, as (h) waits for a fresh step).
   */
  readonly rankInStepKills: number;
  /**
   * The trainer as a torchrun group of 2 CPU ranks (trainer-rank.ts) instead of one process;
   * 'auto': when the kinds include trainer-rank-kill.
   */
  readonly trainerGroup: boolean | 'auto';
  /** Evaluation runs in the workload (evaluation.ts); 'auto': when the kinds include evaluation-worker-kill. */
  readonly evaluationRuns: boolean | 'auto';
  /** Chance that a model request gets a fault, and the kinds drawn. */
  readonly modelFaults: { readonly probability: number; readonly kinds: readonly FaultKind[] };
  readonly workload: WorkloadOptions;
  /** When a run finishes before the fault schedule does, start another of its kind (up to `maxRounds`). */
  readonly keepRunsGoing: boolean;
  readonly maxRounds: number;
  /** After the last fault, how long the runs in progress get to finish. */
  readonly drainTimeoutMs: number;
  /** How long a fault's recovery is watched before it counts as not recovered. */
  readonly recoveryTimeoutMs: number;
  /** How (d) stops the postmaster: fast (SIGINT) or immediate (SIGQUIT, crash recovery at start). */
  readonly postgresMode: 'fast' | 'immediate';
  /** (g): length of a slow window and the latency of each request in it. */
  readonly slowModel: SlowModelOptions;
  /**
   * (h): size of the checkpoint directory's own filesystem, how long a fault keeps it full, and how
   * long it waits for a trainer step no earlier full disk has met (checkpoint-disk.ts).
   */
  readonly checkpointDisk: {
    readonly sizeMb: number;
    readonly holdMs: readonly [number, number];
    readonly freshStepWaitMs: number;
  };
  readonly cpuWorkers: number;
  /**
   * CPU workers call the models through one `mockworld gateway` process (not a fault target),
   * which records an answer paid for while its worker is killed; false = each worker calls the
   * endpoints itself, and an answer on the wire at a kill is paid again.
   */
  readonly modelGateway: boolean;
  /** Path of the temporal binary; default: the project's (deploy/temporal-cli.ts). */
  readonly temporalCli?: string;
  readonly log: (line: string) => void;
}

export const DEFAULT_OPTIONS: Omit<ChaosOptions, 'log'> = {
  faultsPerKind: 10,
  seed: 1,
  kinds: FAULT_KINDS,
  meanGapMs: 30_000,
  warmupMs: 10_000,
  trainerInStepKills: 2,
  trainerKillsAvoidSteps: true,
  rankInStepKills: 5,
  trainerGroup: 'auto',
  evaluationRuns: 'auto',
  modelFaults: { probability: 0.2, kinds: DEFAULT_MODEL_FAULTS },
  workload: {
    synthesisTasks: 20,
    demonstrations: 2,
    synthesisConcurrency: 4,
    grpoIterations: 3,
    grpoTasks: 2,
    grpoRollouts: 4,
    evaluationBfclTasks: 4,
    evaluationTau2Tasks: 2,
    evaluationLatencyMs: 300,
  },
  keepRunsGoing: true,
  maxRounds: 12,
  drainTimeoutMs: 8 * 60_000,
  recoveryTimeoutMs: 5 * 60_000,
  postgresMode: 'fast',
  slowModel: { windowMs: [60_000, 120_000], latencyMs: [5_000, 20_000] },
  checkpointDisk: { sizeMb: 64, holdMs: [20_000, 40_000], freshStepWaitMs: 5 * 60_000 },
  cpuWorkers: 2,
  modelGateway: true,
};

export interface ChaosResult {
  readonly options: Omit<ChaosOptions, 'log'>;
  readonly startedAt: string;
  /** When the runs started (ms since epoch): `atS` of the faults counts from here. */
  readonly runsStartedAt: number;
  readonly durationS: number;
  readonly runs: RunRecord[];
  readonly audits: RunAudit[];
  readonly faults: FaultRecord[];
  /** Faults of a kind that were due but not injected, and why. */
  readonly skipped: Array<{ kind: ChaosFaultKind; reason: string }>;
  readonly modelCalls: ModelCallAudit;
  readonly mappings: MappingAudit;
  /**
   * Activity attempts after the first, with why the one before failed; `afterKill` when a kill of a
   * process that runs that activity type came in the 90 s before (its heartbeat timeout explains it);
   * `explainedBy` the injected fault that explains the retry (retries.ts), none when nothing does;
   * `inSlowWindow` when it started during a slow-model window (g) or up to a minute after.
   */
  readonly activityRetries: Array<
    ActivityRetry & { atS: number; afterKill: boolean; explainedBy?: ChaosFaultKind; inSlowWindow: boolean }
  >;
  /** (g): the slow windows, in seconds since the runs started. */
  readonly slowWindows: Array<{ server: string; fromS: number; toS: number | undefined }>;
  readonly modelServers: Record<
    string,
    Pick<ModelServerStats, 'total' | 'faults' | 'answered' | 'abandoned'>
  >;
  readonly unplannedExits: Array<{
    process: string;
    pid: number;
    atS: number;
    code: number | null;
    signal: string | null;
    stderrTail: string;
  }>;
  /** The trainer: one process, or a torchrun group of `ranks` and the restarts torchrun made of it. */
  readonly trainer: {
    readonly ranks: number;
    /** Group restarts seen (torchrun's restart count, over every torchrun the supervisor started). */
    readonly groupRestarts?: number;
    /** Of them, those no rank kill (j) came just before (within 60 s). */
    readonly groupRestartsUnexplained?: Array<{ atS: number; restart: number }>;
  };
  /** (i): the Evaluation runs' model calls, and those a kill made the replay server answer again. */
  readonly evaluation?: EvaluationCalls;
}

/** A harness instance: `run()` once; `cleanup()` (idempotent) stops and removes everything it started. */
export interface Chaos {
  run(): Promise<ChaosResult>;
  cleanup(): Promise<void>;
}

/** Per-request timeout of the workload's model endpoints without slow windows: a hang costs seconds. */
const HUNG_REQUEST_TIMEOUT_MS = 4_000;

/** The scripted model servers' normal latency (a slow window (g) raises it for a while). */
const SYNTHESIS_LATENCY_MS = 150;
const GRPO_LATENCY_MS = 100;

export function createChaos(options: ChaosOptions): Chaos {
  const log = options.log;
  const cleanups: Array<{ name: string; fn: () => Promise<void> }> = [];
  const supervised: Supervised[] = [];
  let stopping = false;
  let cleaning: Promise<void> | undefined;

  const cleanup = () =>
    (cleaning ??= (async () => {
      stopping = true;
      for (const s of supervised) s.stop().catch(() => undefined); // no restarts from here on
      for (const { name, fn } of cleanups.reverse()) {
        try {
          await fn();
        } catch (error) {
          log(`cleanup: ${name}: ${(error as Error).message}`);
        }
      }
    })());

  const defer = (name: string, fn: () => Promise<void>) => cleanups.push({ name, fn });

  async function run(): Promise<ChaosResult> {
    const started = Date.now();
    let runsStartedAt = started;
    const seconds = (t: number) => Math.round((t - runsStartedAt) / 100) / 10;
    try {
      // Workers and the trainer get exactly the settings below, never the caller's payload key.
      delete process.env.MOCKWORLD_PAYLOAD_KEY;

      const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-chaos-'));
      defer('temp dir', () => rm(dir, { recursive: true, force: true }));
      const home = path.join(dir, 'home');
      const checkpoints = path.join(dir, 'checkpoints');
      await mkdir(home, { recursive: true });
      await mkdir(checkpoints, { recursive: true });
      log(`state in ${dir}`);
      const skipped: ChaosResult['skipped'] = [];
      // (h) fills a filesystem of the harness's own on the checkpoint directory, never a shared one.
      let disk: SmallDisk | undefined;
      if (options.kinds.includes('checkpoint-disk-full') && faultsOf(options, 'checkpoint-disk-full') > 0) {
        const mounted = await mountSmallDisk(checkpoints, options.checkpointDisk.sizeMb);
        if ('reason' in mounted) {
          log(`(h) checkpoint-disk-full skipped: ${mounted.reason}`);
          skipped.push({ kind: 'checkpoint-disk-full', reason: mounted.reason });
        } else {
          disk = mounted;
          defer('checkpoint filesystem', () => mounted.unmount());
        }
      }

      const temporal = new TemporalServer({
        cli: options.temporalCli ?? (await ensureTemporalCli(log)),
        port: await freePort(),
        dbFile: path.join(dir, 'temporal.db'),
        logFile: path.join(dir, 'temporal.log'),
      });
      defer('Temporal dev server', () => temporal.stop());
      await temporal.start();
      const connection = await Connection.connect({ address: temporal.address });
      await registerSearchAttributes(connection, 'default');
      const client = new Client({ connection });
      const observer = new TemporalObserver(connection, client);
      defer('Temporal connection', () => observer.close());
      log(`Temporal dev server at ${temporal.address}`);

      // PostgreSQL of the harness's own: (d) restarts it; the machine's cluster is never touched.
      const postgres: PostgresInstance = await startPostgresInstance({ log });
      defer('PostgreSQL instance', () => postgres.remove());
      const db: TestDatabase = await createTestDatabase('mw_chaos', postgres.adminUrl);
      defer('database', () => db.drop());
      await insertFixtureTasks(db.url, {
        synthesisRunId: FIXTURE_SYNTHESIS_RUN,
        count: options.workload.grpoTasks,
      });
      log(`database ${new URL(db.url).pathname.slice(1)}`);

      const personas = path.join(dir, 'personas.jsonl');
      await writeFile(personas, scriptedPersonas(options.workload.synthesisTasks, false));
      const servers: Record<string, ModelServer> = {
        synthesis: await startModelServer({
          script: synthesisScript,
          latencyMs: SYNTHESIS_LATENCY_MS,
          log: false,
          logDeliveries: true,
        }),
        grpo: await startModelServer({
          script: grpoFixtureScript,
          latencyMs: GRPO_LATENCY_MS,
          log: false,
          logDeliveries: true,
        }),
      };
      for (const [i, server] of Object.values(servers).entries()) {
        defer('model server', () => server.close());
        if (options.modelFaults.probability > 0) {
          server.setRandomFaults({
            probability: options.modelFaults.probability,
            kinds: options.modelFaults.kinds,
            seed: options.seed * 7919 + i,
          });
        }
      }

      const env: Record<string, string> = {
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: 'default',
        DATABASE_URL: db.url,
        MOCKWORLD_TASK_QUEUE: 'chaos-cpu',
        MOCKWORLD_GPU_TASK_QUEUE: 'chaos-gpu',
        MOCKWORLD_HOME: home,
        MOCKWORLD_CHECKPOINT_DIR: checkpoints,
        MOCKWORLD_TRAINER_DEVICE: 'cpu',
      };
      let gateway: Supervised | undefined;
      if (options.modelGateway) {
        const port = await freePort();
        gateway = new Supervised('model gateway', () => launchModelGateway({ ...env }, port), log);
        supervised.push(gateway);
        defer('model gateway', () => gateway!.stop());
        env.MOCKWORLD_MODEL_GATEWAY_URL = (await gateway.start().ready) as string;
      }
      const policy = startPython(
        'mockworld_trainer.policy_server',
        ['--any-run', '--port', '0', '--base', 'tiny', '--default-max-tokens', '32'],
        env,
        /policy server for runs under/,
      );
      defer('policy server', () => policy.kill('SIGKILL'));
      const policyUrl = /(http:\/\/\S+\/v1)/.exec(await policy.ready)?.[1];
      if (!policyUrl) throw new Error(`no URL in the policy server's first line: ${await policy.ready}`);
      const proxy: CountingProxy = await startCountingProxy(policyUrl, {
        latencyMs: 100,
        keepHeaders: ['x-policy-version', 'x-run-id'],
      });
      defer('policy proxy', () => proxy.close());

      // (j) needs ranks to kill: the trainer is then a torchrun group, killed whole by (b) (a node failure).
      const groupMode =
        options.trainerGroup === 'auto' ? options.kinds.includes('trainer-rank-kill') : options.trainerGroup;
      const trainer = groupMode
        ? new Supervised('trainer group (torchrun)', () => launchTrainerGroup(env), log, { tree: true })
        : new Supervised(
            'trainer worker',
            () => startPython('mockworld_trainer.worker', [], env, /trainer worker:/),
            log,
          );
      /** The trainer process that polls (rank 0 of the group): its pid is the worker's identity. */
      const trainerPid = async () => (groupMode ? rankZeroPid(trainer.pid) : trainer.pid);

      // (i) needs an evaluation worker to kill, and Evaluation runs for it to serve.
      const evaluationMode =
        options.evaluationRuns === 'auto'
          ? options.kinds.includes('evaluation-worker-kill')
          : options.evaluationRuns;
      const evalWorkload = evaluationWorkload(
        options.workload.evaluationBfclTasks,
        options.workload.evaluationTau2Tasks,
      );
      const evalQueue = 'chaos-eval';
      let evalModels: EvalModels | undefined;
      let evalWorker: Supervised | undefined;
      if (evaluationMode) {
        evalModels = await startEvaluationModels(evalWorkload, options.workload.evaluationLatencyMs);
        defer('evaluation model server', () => evalModels!.server.close());
        const evalEnv = { ...env, MOCKWORLD_EVAL_TASK_QUEUE: evalQueue, MOCKWORLD_EVAL_CONCURRENCY: '2' };
        evalWorker = new Supervised('evaluation worker', () => launchEvalWorker(evalEnv), log, {
          tree: true,
        });
      }
      const workers = Array.from(
        { length: options.cpuWorkers },
        (_, i) =>
          new Supervised(
            `cpu worker ${i + 1}`,
            () => {
              const w = startWorkerProcess(env);
              return { child: w.child, ready: Promise.resolve() };
            },
            log,
          ),
      );
      supervised.push(trainer, ...workers, ...(evalWorker ? [evalWorker] : []));
      defer('worker processes', async () => {
        await Promise.all(supervised.map((s) => s.stop()));
      });
      trainer.start();
      for (const w of workers) w.start();
      evalWorker?.start();
      /** Pids of worker processes seen polling their task queue: ready to serve, and to be killed. */
      const ready = new Set<number>();
      const polling = (pidOf: () => Promise<number | undefined>, queue: string) => async () => {
        const pid = await pidOf();
        if (pid === undefined) return false;
        if (!ready.has(pid) && (await observer.polling(queue, workerIdentity(pid), 'activity')))
          ready.add(pid);
        return ready.has(pid);
      };
      const pidOf = (s: Supervised) => async () => s.pid;
      await until(async () => {
        const all = await Promise.all([
          polling(trainerPid, env.MOCKWORLD_GPU_TASK_QUEUE!)(),
          ...workers.map((w) => polling(pidOf(w), env.MOCKWORLD_TASK_QUEUE!)()),
          ...(evalWorker ? [polling(pidOf(evalWorker), evalQueue)()] : []),
        ]);
        return all.every(Boolean);
      }, 240_000);
      log(
        `${workers.length} CPU workers, the trainer ${groupMode ? `group (${GROUP_RANKS} ranks under torchrun)` : 'worker'}` +
          `${evalWorker ? ' and the evaluation worker' : ''} are polling; policy server at ${policyUrl}`,
      );

      /**
       * Every restart torchrun makes of the group (its restart count going up, per torchrun the
       * supervisor started), sampled each second: those no rank kill explains are a finding.
       */
      const groupRestarts: Array<{ atS: number; torchrun: number; restart: number }> = [];
      if (groupMode) {
        const seen = new Map<number, number>();
        const sampler = setInterval(() => {
          const pid = trainer.pid;
          if (pid === undefined || stopping) return;
          void groupRanks(pid).then((ranks) => {
            const restart = Math.max(-1, ...ranks.map((r) => r.restart));
            if (restart < 0) return;
            for (let n = (seen.get(pid) ?? 0) + 1; n <= restart; n++)
              groupRestarts.push({ atS: seconds(Date.now()), torchrun: pid, restart: n });
            seen.set(pid, Math.max(seen.get(pid) ?? 0, restart));
          });
        }, 1_000);
        defer('group restart sampler', async () => clearInterval(sampler));
      }

      // ---------------------------------------------------------------------------------------
      // The workload: a synthesis run and a GRPO run at once; another of a kind when one ends early.
      const runs: RunRecord[] = [];
      let scheduleDone = false;
      const runsInProgress = () => runs.filter((r) => r.status === undefined).length;
      // A hung request (a model fault) costs the endpoint's timeout; a slow window's answers must
      // outlast none of it, so with (g) the timeout is the slowest answer plus a margin.
      const modelTimeoutMs = options.kinds.includes('slow-model')
        ? options.slowModel.latencyMs[1] + 10_000
        : HUNG_REQUEST_TIMEOUT_MS;
      const stamp = Date.now().toString(36);

      const startRun = async (kind: RunRecord['kind'], round: number): Promise<RunRecord> => {
        const name = { Synthesis: 'synthesis', GrpoTraining: 'grpo', Evaluation: 'evaluation' }[kind];
        const workflowId = `chaos-${name}-${stamp}-r${round}`;
        const spec =
          kind === 'Synthesis'
            ? synthesisSpec(options.workload, personas, servers.synthesis!.url, round, modelTimeoutMs)
            : kind === 'Evaluation'
              ? evaluationSpec(evalWorkload, evalModels!.server.url, evalQueue, round)
              : grpoSpec(
                  options.workload,
                  workflowId,
                  servers.grpo!.url,
                  proxy.url,
                  env.MOCKWORLD_GPU_TASK_QUEUE!,
                  round,
                  modelTimeoutMs,
                );
        await until(async () => {
          try {
            await observer.deadline(10_000, () =>
              client.workflow.start(kind, { args: [spec], taskQueue: env.MOCKWORLD_TASK_QUEUE!, workflowId }),
            );
            return true;
          } catch (error) {
            if (error instanceof WorkflowExecutionAlreadyStartedError) return true; // the first try got through
            return false;
          }
        }, 120_000);
        const record: RunRecord = { kind, workflowId, round, startedAt: Date.now() };
        runs.push(record);
        log(`started ${workflowId}`);
        return record;
      };

      const waitClosed = async (record: RunRecord, deadline: () => number) => {
        for (;;) {
          if (stopping) throw new Error('the harness is stopping');
          const status = await observer.status(record.workflowId, 5_000);
          if (status && status !== 'RUNNING' && status !== 'NOT_FOUND') {
            record.status = status;
            break;
          }
          if (Date.now() > deadline()) {
            record.status = 'TIMED_OUT';
            const view = await observer.describe(record.workflowId);
            record.error = `not closed by the harness's deadline; pending: ${JSON.stringify(view?.pending ?? 'unknown')}`;
            break;
          }
          await sleep(2_000);
        }
        record.closedAt = Date.now();
        const handle = client.workflow.getHandle(record.workflowId);
        if (record.status === 'COMPLETED') {
          record.result = await until(
            () => observer.deadline(10_000, () => handle.result()).catch(() => undefined),
            60_000,
          );
        } else if (record.status !== 'TIMED_OUT') {
          record.error = await observer
            .deadline(10_000, () => handle.result())
            .then(
              () => 'closed without failing',
              (error: Error) => `${error.message}${error.cause ? `: ${(error.cause as Error).message}` : ''}`,
            );
        }
        log(
          `${record.workflowId} ${record.status} after ${((record.closedAt - record.startedAt) / 1000).toFixed(0)} s`,
        );
      };

      let drainDeadline = Number.POSITIVE_INFINITY;
      const chain = async (kind: RunRecord['kind']) => {
        for (let round = 0; round < options.maxRounds && !stopping; round++) {
          if (round > 0 && (scheduleDone || !options.keepRunsGoing)) break;
          const record = await startRun(kind, round);
          await waitClosed(record, () => drainDeadline);
        }
      };
      runsStartedAt = Date.now();
      const chains = Promise.all([
        chain('Synthesis'),
        chain('GrpoTraining'),
        ...(evaluationMode ? [chain('Evaluation')] : []),
      ]);
      chains.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile

      // ---------------------------------------------------------------------------------------
      // The faults.
      const faults: FaultRecord[] = [];
      const kills: KillRecord[] = [];
      const evalKills: EvalKill[] = [];
      const slowWindows: SlowWindow[] = [];
      const watches: Promise<void>[] = [];
      const monitors = {
        push: (watch: Promise<void>) =>
          watches.push(watch.catch((error: Error) => log(`watching a recovery failed: ${error.message}`))),
      };
      /** A fault's recovery is watched for `recoveryTimeoutMs`, and no longer than 30 s after the last run ended. */
      let workloadDoneAt = Number.POSITIVE_INFINITY;
      const watchUntil = (at: number) => () =>
        stopping ? 0 : Math.min(at + options.recoveryTimeoutMs, workloadDoneAt + 30_000);

      /**
       * (a), (b): recovered when every activity the killed process was running has started again
       * (or finished) and the queue has a worker serving it: another one that was ready at the kill,
       * else the replacement (`serving`).
       */
      const watchActivities = async (
        record: FaultRecord,
        at: number,
        identity: string,
        before: PendingActivity[] | undefined,
        serving: Promise<number | undefined>,
      ) => {
        let affected = before;
        if (!affected) {
          // Temporal was down at the kill: read the victim's activities as soon as it answers again.
          const views = await until(() => observer.snapshot(), options.recoveryTimeoutMs);
          affected = views.flatMap((v) => v.pending.filter((a) => a.identity === identity));
          record.notes.push('activities read after the kill (Temporal was down at the kill)');
        }
        record.interrupted = affected.length;
        const resumedAt = await activitiesResumed(observer, affected, watchUntil(at));
        const servingAt = await serving;
        if (resumedAt !== undefined && servingAt !== undefined)
          record.recoveryMs = Math.max(resumedAt, servingAt) - at;
        else
          record.notes.push(
            resumedAt === undefined
              ? 'interrupted activities not resumed in time'
              : 'replacement never polled',
          );
      };

      /** When the process `pid` (or the one `pid()` names once it exists: a new group's rank 0) polls `queue`. */
      const waitPolling = async (
        queue: string,
        pid: number | undefined | (() => Promise<number | undefined>),
        at: number,
        record: FaultRecord,
      ) => {
        if (pid === undefined) return undefined;
        try {
          const polled = await until(
            async () => {
              const p = typeof pid === 'number' ? pid : await pid();
              return p !== undefined && (await observer.polling(queue, workerIdentity(p), 'activity'))
                ? p
                : undefined;
            },
            options.recoveryTimeoutMs,
            250,
          );
          ready.add(polled);
          const now = Date.now();
          record.backMs = now - at;
          return now;
        } catch {
          return undefined;
        }
      };

      const context: FaultContext = {
        observer,
        log,
        seconds,
        runsInProgress,
        record: (fault) => faults.push(fault),
        monitor: (watch) => monitors.push(watch),
        watchUntil,
        stopping: () => stopping,
      };
      /** A trainer step running on the trainer process `pid` (one started on a killed one stays "started" until it times out). */
      const trainerStepRunning = async (pid: number | undefined) => {
        const views = temporal.up ? await observer.snapshot(3_000) : undefined;
        const identity = pid === undefined ? '' : workerIdentity(pid);
        return views?.some((v) =>
          v.pending.some((a) => a.started && a.type === 'trainer.grpoStep' && a.identity === identity),
        );
      };

      const injectors: Record<ChaosFaultKind, Injector> = {
        'cpu-worker-kill': async (seq, random) => {
          const candidates = workers.filter((w) => w.pid !== undefined && ready.has(w.pid));
          if (candidates.length === 0) return 'later';
          const victim = candidates[Math.floor(random() * candidates.length)]!;
          const pid = victim.pid!;
          const othersServing = candidates.length > 1;
          const identity = workerIdentity(pid);
          const views = temporal.up ? await observer.snapshot(3_000) : undefined;
          const before = views?.flatMap((v) => v.pending.filter((a) => a.started && a.identity === identity));
          // Stopped first: no connection may open between reading its ports and the kill.
          process.kill(pid, 'SIGSTOP');
          const ports = await tcpPortsOf(pid);
          const at = Date.now();
          const kill: KillRecord = { pid, at, ports, process: 'cpu-worker' };
          kills.push(kill);
          const { next } = await victim.killAndRestart();
          kill.diedAt = Date.now();
          const record: FaultRecord = {
            kind: 'cpu-worker-kill',
            seq,
            atS: seconds(at),
            detail: `${victim.name} pid ${pid} (${before?.length ?? '?'} activities running on it)`,
            runsInProgress: runsInProgress(),
            notes: [],
          };
          faults.push(record);
          log(`fault (a) #${seq}: SIGKILL ${record.detail}`);
          const back = waitPolling(env.MOCKWORLD_TASK_QUEUE!, next.child.pid, at, record);
          monitors.push(
            watchActivities(record, at, identity, before, othersServing ? Promise.resolve(at) : back),
          );
          await back;
          return 'done';
        },

        'trainer-kill': async (seq, random) => {
          const servingAtStart = await trainerPid();
          if (servingAtStart === undefined || !ready.has(servingAtStart)) return 'later';
          void random;
          const stepRunning = async () => trainerStepRunning(await trainerPid());
          const wantStep = seq <= options.trainerInStepKills;
          if (wantStep || options.trainerKillsAvoidSteps) {
            // Wait (bounded) for a step to be running (or for none to be), so the kill lands where asked.
            const deadline = Date.now() + 60_000;
            while (Date.now() < deadline && !stopping && (await stepRunning()) !== wantStep) await sleep(250);
          }
          const inStep = (await stepRunning()) === true;
          const pid = trainer.pid;
          const serving = await trainerPid();
          if (pid === undefined || serving === undefined) return 'later';
          const identity = workerIdentity(serving);
          const views = temporal.up ? await observer.snapshot(3_000) : undefined;
          const before = views?.flatMap((v) => v.pending.filter((a) => a.started && a.identity === identity));
          const at = Date.now();
          // In a group: torchrun and every rank at once (a node failure); the supervisor starts a new torchrun.
          const { next } = await trainer.killAndRestart();
          const record: FaultRecord = {
            kind: 'trainer-kill',
            seq,
            atS: seconds(at),
            detail:
              `${groupMode ? `torchrun pid ${pid} with its ${GROUP_RANKS} ranks (rank 0 pid ${serving})` : `pid ${pid}`}` +
              `${inStep ? ', inside a trainer step' : ''} (${before?.length ?? '?'} activities running on it)`,
            runsInProgress: runsInProgress(),
            notes: [],
          };
          faults.push(record);
          log(`fault (b) #${seq}: SIGKILL trainer ${record.detail}`);
          const back = waitPolling(
            env.MOCKWORLD_GPU_TASK_QUEUE!,
            groupMode ? () => rankZeroPid(next.child.pid) : next.child.pid,
            at,
            record,
          );
          monitors.push(watchActivities(record, at, identity, before, back));
          await back;
          return 'done';
        },

        'temporal-restart': async (seq) => {
          const views = await observer.snapshot(3_000);
          const at = Date.now();
          await temporal.crash();
          const record: FaultRecord = {
            kind: 'temporal-restart',
            seq,
            atS: seconds(at),
            detail: `dev server SIGKILLed with ${views?.length ?? '?'} workflows running`,
            runsInProgress: runsInProgress(),
            notes: [],
          };
          faults.push(record);
          log(`fault (c) #${seq}: ${record.detail}`);
          await temporal.start();
          const backAt = Date.now();
          record.backMs = backAt - at;
          monitors.push(
            (async () => {
              const watched = [
                ...(views ?? []).map((v) => v.workflowId),
                ...runs.filter((r) => r.status === undefined).map((r) => r.workflowId),
              ];
              const doneAt = await historyProgress(observer, watched, at, watchUntil(at));
              if (doneAt !== undefined) record.recoveryMs = doneAt - at;
              else record.notes.push('no work completed in time after the restart');
            })(),
          );
          return 'done';
        },

        'postgres-restart': async (seq) => {
          const at = Date.now();
          const pid = postgres.pid;
          const record: FaultRecord = {
            kind: 'postgres-restart',
            seq,
            atS: seconds(at),
            detail: `own postmaster pid ${pid} stopped ${options.postgresMode} (${options.postgresMode === 'fast' ? 'SIGINT' : 'SIGQUIT'}) and started again`,
            runsInProgress: runsInProgress(),
            notes: [],
          };
          faults.push(record);
          log(`fault (d) #${seq}: ${record.detail}`);
          await postgres.restart(options.postgresMode);
          await until(() => postgresAnswers(db.url), 120_000);
          const backAt = Date.now();
          record.backMs = backAt - at;
          monitors.push(
            (async () => {
              const doneAt = await databaseProgress(db.url, backAt, watchUntil(at), record.notes);
              if (doneAt !== undefined) record.recoveryMs = doneAt - at;
              else record.notes.push('no write to the database in time after the restart');
            })(),
          );
          return 'done';
        },

        'gateway-kill': gateway
          ? gatewayKillInjector(context, gateway, env.MOCKWORLD_MODEL_GATEWAY_URL!, db.url, kills)
          : async () => 'later',

        'slow-model': slowModelInjector(
          context,
          [
            { name: 'synthesis', server: servers.synthesis!, latencyMs: SYNTHESIS_LATENCY_MS },
            { name: 'GRPO', server: servers.grpo!, latencyMs: GRPO_LATENCY_MS },
          ],
          options.slowModel,
          kills,
          slowWindows,
        ),

        'checkpoint-disk-full': disk
          ? diskFullInjector(
              context,
              disk,
              options.checkpointDisk,
              async () => {
                const serving = await trainerPid();
                const identity = serving === undefined ? '' : workerIdentity(serving);
                const views = temporal.up ? await observer.snapshot(3_000) : undefined;
                const running = views
                  ?.flatMap((v) => v.pending)
                  .find((a) => a.started && a.type === 'trainer.grpoStep' && a.identity === identity);
                return running;
              },
              async (step) => {
                const view = await observer.describe(step.workflowId);
                if (!view) return 'unknown';
                return view.pending.find((a) => a.activityId === step.activityId);
              },
            )
          : async () => 'later',

        'evaluation-worker-kill': evalWorker
          ? evaluationKillInjector(context, {
              observer,
              worker: evalWorker,
              queue: evalQueue,
              ready,
              kills: evalKills,
              recoveryTimeoutMs: options.recoveryTimeoutMs,
              temporalUp: () => temporal.up,
              evaluationRunning: () => runs.some((r) => r.kind === 'Evaluation' && r.status === undefined),
            })
          : async () => 'later',

        'trainer-rank-kill': groupMode
          ? rankKillInjector(context, {
              observer,
              group: trainer,
              queue: env.MOCKWORLD_GPU_TASK_QUEUE!,
              ready,
              inStepKills: options.rankInStepKills,
              freshStepWaitMs: options.checkpointDisk.freshStepWaitMs,
              recoveryTimeoutMs: options.recoveryTimeoutMs,
              temporalUp: () => temporal.up,
            })
          : async () => 'later',
      };
      // Kinds that cannot run here (no filesystem of our own to fill; no gateway; no evaluation
      // worker or trainer group, set off by hand) are not scheduled.
      const unable: Partial<Record<ChaosFaultKind, string>> = {
        ...(disk ? {} : { 'checkpoint-disk-full': 'no filesystem of its own to fill' }),
        ...(gateway ? {} : { 'gateway-kill': 'the CPU workers call the models directly (no gateway)' }),
        ...(evalWorker ? {} : { 'evaluation-worker-kill': 'no Evaluation runs (evaluationRuns: false)' }),
        ...(groupMode ? {} : { 'trainer-rank-kill': 'the trainer is one process (trainerGroup: false)' }),
      };
      const schedulable = options.kinds.filter((k) => !unable[k] && faultsOf(options, k) > 0);
      for (const kind of options.kinds)
        if (unable[kind] && faultsOf(options, kind) > 0 && !skipped.some((x) => x.kind === kind))
          skipped.push({ kind, reason: unable[kind]! });

      await schedule({ ...options, kinds: schedulable }, injectors, () => stopping, log);
      scheduleDone = true;
      log(`all faults injected; waiting for the runs in progress`);
      drainDeadline = Date.now() + options.drainTimeoutMs;
      await chains;
      workloadDoneAt = Date.now();
      await Promise.all(watches);

      // ---------------------------------------------------------------------------------------
      // The audit.
      log('auditing');
      const audits: RunAudit[] = [];
      const auditStarted = Date.now();
      const replays = await replayRuns(
        checkpoints,
        runs.filter((r) => r.kind === 'GrpoTraining').map((r) => r.workflowId),
        env,
        // A group's steps are replayed by a group of the same size: bit-identical to each other,
        // not to one process (FSDP's reduce-scatter sums in another order).
        groupMode ? GROUP_RANKS : 1,
      );
      log(
        `replayed the trainer steps of ${replays.size} GRPO runs in ${((Date.now() - auditStarted) / 1000).toFixed(0)} s`,
      );
      for (const record of runs) {
        if (record.kind === 'Evaluation') {
          audits.push(await auditEvaluation(db.url, record, evalWorkload, evalModels!.calls));
          continue;
        }
        audits.push(
          record.kind === 'Synthesis'
            ? await auditSynthesis(
                db.url,
                observer,
                record,
                options.workload.synthesisTasks,
                options.workload.demonstrations,
                home,
              )
            : await auditGrpo(
                db.url,
                observer,
                record,
                {
                  iterations: options.workload.grpoIterations,
                  tasks: options.workload.grpoTasks,
                  rollouts: options.workload.grpoRollouts,
                },
                checkpoints,
                replays,
              ),
        );
      }
      const modelCalls = await auditModelCalls(
        db.url,
        [
          {
            name: 'synthesis model server',
            url: servers.synthesis!.url,
            answers: servers.synthesis!.deliveries,
            arrivals: servers.synthesis!.arrivals,
          },
          {
            name: 'GRPO model server',
            url: servers.grpo!.url,
            answers: servers.grpo!.deliveries,
            arrivals: servers.grpo!.arrivals,
          },
          {
            name: 'policy server (via proxy)',
            url: proxy.url,
            // The same prompt under another policy version is another call (the ledger keys it so).
            answers: proxy.answers
              .filter((a) => a.status === 200)
              .map((a) => ({ ...a, bodyHash: `${a.bodyHash}@${a.headers['x-policy-version']}` })),
          },
        ],
        kills,
      );
      const mappings = await auditMappings(db.url);
      const retries = await observer.activityRetries().catch((error: Error) => {
        log(`could not read the activity retries: ${error.message}`);
        return [] as ActivityRetry[];
      });
      const activityRetries = retries.map((r) => {
        const killKinds: ChaosFaultKind[] = r.type.startsWith('trainer.')
          ? ['trainer-kill', 'trainer-rank-kill']
          : r.type.startsWith('eval.')
            ? ['evaluation-worker-kill']
            : ['cpu-worker-kill'];
        const atS = seconds(r.startedAt);
        const afterKill = faults.some((f) => killKinds.includes(f.kind) && f.atS <= atS && atS - f.atS <= 90);
        const explainedBy = explainRetry({ ...r, atS }, faults);
        const inSlowWindow = slowWindows.some(
          (w) => r.startedAt >= w.from && r.startedAt <= (w.to ?? Number.POSITIVE_INFINITY) + 60_000,
        );
        return { ...r, atS, afterKill, ...(explainedBy ? { explainedBy } : {}), inSlowWindow };
      });
      log(`audit done in ${((Date.now() - auditStarted) / 1000).toFixed(0)} s`);
      const unplannedExits = supervised.flatMap((s) =>
        s.unplannedExits.map((l: ProcessLife) => {
          const exit = l.exit as Exclude<ProcessLife['exit'], 'killed' | undefined>;
          return {
            process: s.name,
            pid: l.pid,
            atS: seconds(l.exitedAt!),
            code: exit.code,
            signal: exit.signal,
            stderrTail: exit.stderrTail,
          };
        }),
      );
      const evaluation = evalModels
        ? await evaluationCalls(
            db.url,
            runs.filter((r) => r.kind === 'Evaluation'),
            evalModels.calls,
            evalKills,
          )
        : undefined;
      const { log: _log, ...recorded } = options;
      return {
        options: recorded,
        startedAt: new Date(started).toISOString(),
        runsStartedAt,
        durationS: Math.round((Date.now() - started) / 1000),
        runs,
        audits,
        faults: faults.sort((x, y) => x.atS - y.atS),
        skipped,
        modelCalls,
        mappings,
        activityRetries,
        slowWindows: slowWindows.map((w) => ({
          server: w.server,
          fromS: seconds(w.from),
          toS: w.to === undefined ? undefined : seconds(w.to),
        })),
        modelServers: Object.fromEntries(
          [
            ...Object.entries(servers).map(([k, s]) => [k, s.stats] as const),
            ['policy proxy', { ...proxy.stats, faults: {} }] as const,
          ].map(([k, s]) => [
            k,
            {
              total: s.total,
              faults: 'faults' in s ? s.faults : {},
              answered: s.answered,
              abandoned: s.abandoned,
            },
          ]),
        ),
        unplannedExits,
        trainer: groupMode
          ? {
              ranks: GROUP_RANKS,
              groupRestarts: groupRestarts.length,
              groupRestartsUnexplained: groupRestarts
                .filter(
                  (g) =>
                    !faults.some(
                      (f) => f.kind === 'trainer-rank-kill' && f.atS <= g.atS && g.atS - f.atS <= 60,
                    ),
                )
                .map((g) => ({ atS: g.atS, restart: g.restart })),
            }
          : { ranks: 1 },
        ...(evaluation ? { evaluation } : {}),
      };
    } finally {
      await cleanup();
    }
  }

  return { run, cleanup };
}

// ---------------------------------------------------------------------------------------------

/** Polls `check` until it returns a truthy value; throws after `timeoutMs`. */
async function until<T>(
  check: () => Promise<T | undefined | false | null>,
  timeoutMs: number,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

/** How many faults of `kind` a run injects. */
export function faultsOf(
  options: Pick<ChaosOptions, 'faultsPerKind' | 'faultsOfKind'>,
  kind: ChaosFaultKind,
) {
  return options.faultsOfKind?.[kind] ?? options.faultsPerKind;
}

/**
 * Injects `faultsPerKind` faults of every kind (`faultsOfKind` where it names the kind). The gaps between two faults of one kind are drawn
 * from a generator per kind seeded from `seed`; kinds run independently, so faults of different
 * kinds overlap. A fault waits until the previous one of its kind has healed (the killed part
 * serves again), and an injector that cannot act now (no worker ready) is asked again 5 s later.
 */
async function schedule(
  options: ChaosOptions,
  injectors: Record<ChaosFaultKind, Injector>,
  stopped: () => boolean,
  log: (line: string) => void,
): Promise<void> {
  await Promise.all(
    options.kinds.map(async (kind) => {
      const random = mulberry32(options.seed * 1_000_003 + FAULT_KINDS.indexOf(kind) + 1);
      const gap = () => options.meanGapMs * (0.5 + random());
      await sleep(options.warmupMs + random() * options.meanGapMs);
      const count = faultsOf(options, kind);
      for (let seq = 1; seq <= count && !stopped(); seq++) {
        const dueAt = Date.now();
        for (;;) {
          if (stopped()) return;
          let outcome: 'done' | 'later';
          try {
            outcome = await injectors[kind](seq, random);
          } catch (error) {
            log(`fault ${kind} #${seq} failed to inject: ${(error as Error).message}`);
            outcome = 'later';
          }
          if (outcome === 'done') break;
          await sleep(5_000);
        }
        // The gap counts from when the fault was due; a fault that took longer to heal is followed at once.
        if (seq < count) await sleep(Math.max(0, dueAt + gap() - Date.now()));
      }
    }),
  );
}

/**
 * When a workflow records finished work (an activity or child completed) at or after `since`: the
 * restarted server is making progress. Watches `initial` (running at the crash) and every workflow
 * the server lists as running since; a history is read again only when its length changed.
 */
async function historyProgress(
  observer: TemporalObserver,
  initial: readonly string[],
  since: number,
  deadline: () => number,
): Promise<number | undefined> {
  const watched = new Set(initial);
  const lengths = new Map<string, number>();
  while (Date.now() < deadline()) {
    for (const id of await observer.running().catch(() => [] as string[])) watched.add(id);
    for (const id of watched) {
      const view = await observer.describe(id);
      if (!view || lengths.get(id) === view.historyLength) continue;
      lengths.set(id, view.historyLength);
      if (await observer.completedWorkSince(id, since)) return Date.now();
    }
    await sleep(500);
  }
  return undefined;
}

/**
 * When the pipeline next writes to PostgreSQL after `since` (a model call, a turn, a stage, a
 * judgement, a batch, metrics); undefined at `deadline`, with what was seen in `notes`.
 */
async function databaseProgress(
  url: string,
  since: number,
  deadline: () => number,
  notes: string[],
): Promise<number | undefined> {
  let lastError: string | undefined;
  let lastWrite: number | undefined;
  while (Date.now() < deadline()) {
    try {
      const [row] = await query<{ last: Date | null }>(
        url,
        `SELECT greatest((SELECT max(created_at) FROM llm_calls), (SELECT max(updated_at) FROM episodes),
                         (SELECT max(updated_at) FROM tasks), (SELECT max(created_at) FROM judgements),
                         (SELECT max(created_at) FROM tool_mappings), (SELECT max(created_at) FROM trainer_batches),
                         (SELECT max(updated_at) FROM training_metrics), (SELECT max(updated_at) FROM runs)) AS last`,
      );
      lastWrite = row?.last ? row.last.getTime() : undefined;
      if (lastWrite !== undefined && lastWrite > since) return Date.now();
    } catch (error) {
      lastError = (error as Error).message; // PostgreSQL still coming back
    }
    await sleep(250);
  }
  notes.push(
    `last write seen ${lastWrite === undefined ? 'never' : `${((lastWrite - since) / 1000).toFixed(1)} s from the restart`}` +
      (lastError ? `; last error: ${lastError}` : ''),
  );
  return undefined;
}
