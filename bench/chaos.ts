/**
 * Chaos benchmark: a synthesis run and a GRPO run on a private stack (own Temporal dev server and
 * db file, own PostgreSQL instance, scripted model servers with 20% random faults, two CPU worker
 * processes calling them through a model gateway, the Python trainer worker and policy server)
 * while CPU workers, the trainer and the gateway are SIGKILLed, the Temporal server is crashed and
 * restarted, PostgreSQL is restarted, a model server answers in 5–20 s for a minute or two, the
 * checkpoint directory's disk fills up, the evaluation worker is SIGKILLed under Evaluation runs
 * and a rank of the trainer (then a torchrun group of 2 CPU ranks) is SIGKILLed, each at seeded
 * random points. Then audits the database, histories and checkpoints and prints what was lost,
 * duplicated, applied twice or paid twice, and how long each kind of fault took to recover.
 *
 * Run: `npx tsx bench/chaos.ts` (about 20–30 min at the defaults on 2 cores). Prints Markdown
 * tables and writes bench/results/chaos.json. A run of some kinds only (CHAOS_KINDS) writes
 * bench/results/chaos-partial.json instead and prints, after its own tables, those of the last
 * run of every kind (bench/results/chaos.json, with its date and kinds): docs/benchmarks.md keeps the
 * figures of the kinds it did not run, labelled as an earlier run's. Knobs (environment):
 *   CHAOS_FAULTS_PER_KIND (10)      faults of each kind (a)–(d), (f)–(j)
 *   CHAOS_SEED (1)                  seeds the fault schedule, the victims and the model faults
 *   CHAOS_KINDS (all)               comma list of cpu-worker-kill, trainer-kill, temporal-restart, postgres-restart,
 *                                   gateway-kill, slow-model, checkpoint-disk-full, evaluation-worker-kill,
 *                                   trainer-rank-kill
 *   CHAOS_MEAN_GAP_S (30)           mean seconds between two faults of one kind (kinds overlap)
 *   CHAOS_MODEL_FAULT_PROBABILITY (0.2), CHAOS_MODEL_FAULT_KINDS (rate-limit,server-error,hang,truncated-body,malformed-body)
 *   CHAOS_SYNTHESIS_TASKS (20), CHAOS_GRPO_ITERATIONS (3), CHAOS_GRPO_TASKS (2), CHAOS_GRPO_ROLLOUTS (4)
 *   CHAOS_TRAINER_IN_STEP_KILLS (2) trainer kills that wait for a trainer step to be running
 *   CHAOS_RANK_IN_STEP_KILLS (5)    (j): rank kills that wait for a trainer step no rank kill has met
 *   CHAOS_EVAL_BFCL_TASKS (4), CHAOS_EVAL_TAU2_TASKS (2)  (i): trials of each Evaluation run
 *   CHAOS_PG_MODE (fast)            how (d) stops the harness's own postmaster: fast (SIGINT) or immediate (SIGQUIT)
 *   CHAOS_SLOW_WINDOW_S (60,120)    (g): a slow window lasts between these many seconds
 *   CHAOS_SLOW_LATENCY_S (5,20)     (g): each request in it waits between these many seconds
 *   CHAOS_DISK_FULL_S (20,40)       (h): the checkpoint disk stays full between these many seconds
 *   CHAOS_MODEL_GATEWAY (1)         0: CPU workers call the model servers themselves instead of through
 *                                   `mockworld gateway`, and an answer on the wire at a kill is paid again
 *
 * Nothing of the machine's is restarted: PostgreSQL is an instance of the run's own (initdb in a temp
 * dir, its own port), the checkpoint disk a tmpfs of its own (as root; (h) is skipped, saying why,
 * where mounting is refused). Everything started here is stopped and removed at the end, on
 * failure and on SIGINT/SIGTERM.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FaultKind } from '../testkit/model-server.js';
import { createChaos, DEFAULT_OPTIONS, FAULT_KINDS, type ChaosFaultKind } from '../testkit/chaos/harness.js';
import type { ChaosResult } from '../testkit/chaos/harness.js';
import { KIND_LETTER, markdown, totals } from '../testkit/chaos/report.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const list = <T extends string>(name: string, fallback: readonly T[]) =>
  process.env[name]
    ? (process.env[name]!.split(',')
        .map((x) => x.trim())
        .filter(Boolean) as T[])
    : fallback;

/** A `min,max` range in seconds from the environment, in ms. */
const pair = (name: string, fallbackMs: readonly [number, number]): [number, number] => {
  const raw = process.env[name];
  if (!raw) return [fallbackMs[0], fallbackMs[1]];
  const [min, max] = raw.split(',').map((x) => Number(x) * 1000);
  if (!Number.isFinite(min) || !Number.isFinite(max) || min! < 0 || max! < min!)
    throw new Error(`${name}: expected "min,max" seconds, got ${raw}`);
  return [min!, max!];
};

const started = Date.now();
const log = (line: string) =>
  console.error(`[chaos ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);

const kinds = list<ChaosFaultKind>('CHAOS_KINDS', FAULT_KINDS);
for (const k of kinds)
  if (!FAULT_KINDS.includes(k)) throw new Error(`CHAOS_KINDS: unknown kind ${k} (${FAULT_KINDS.join(', ')})`);

const chaos = createChaos({
  ...DEFAULT_OPTIONS,
  faultsPerKind: num('CHAOS_FAULTS_PER_KIND', DEFAULT_OPTIONS.faultsPerKind),
  seed: num('CHAOS_SEED', DEFAULT_OPTIONS.seed),
  kinds,
  meanGapMs: num('CHAOS_MEAN_GAP_S', DEFAULT_OPTIONS.meanGapMs / 1000) * 1000,
  trainerInStepKills: num('CHAOS_TRAINER_IN_STEP_KILLS', DEFAULT_OPTIONS.trainerInStepKills),
  rankInStepKills: num('CHAOS_RANK_IN_STEP_KILLS', DEFAULT_OPTIONS.rankInStepKills),
  modelFaults: {
    probability: num('CHAOS_MODEL_FAULT_PROBABILITY', DEFAULT_OPTIONS.modelFaults.probability),
    kinds: list<FaultKind>('CHAOS_MODEL_FAULT_KINDS', DEFAULT_OPTIONS.modelFaults.kinds),
  },
  workload: {
    ...DEFAULT_OPTIONS.workload,
    synthesisTasks: num('CHAOS_SYNTHESIS_TASKS', DEFAULT_OPTIONS.workload.synthesisTasks),
    grpoIterations: num('CHAOS_GRPO_ITERATIONS', DEFAULT_OPTIONS.workload.grpoIterations),
    grpoTasks: num('CHAOS_GRPO_TASKS', DEFAULT_OPTIONS.workload.grpoTasks),
    grpoRollouts: num('CHAOS_GRPO_ROLLOUTS', DEFAULT_OPTIONS.workload.grpoRollouts),
    evaluationBfclTasks: num('CHAOS_EVAL_BFCL_TASKS', DEFAULT_OPTIONS.workload.evaluationBfclTasks),
    evaluationTau2Tasks: num('CHAOS_EVAL_TAU2_TASKS', DEFAULT_OPTIONS.workload.evaluationTau2Tasks),
  },
  postgresMode: process.env.CHAOS_PG_MODE === 'immediate' ? 'immediate' : 'fast',
  modelGateway: process.env.CHAOS_MODEL_GATEWAY !== '0',
  slowModel: {
    windowMs: pair('CHAOS_SLOW_WINDOW_S', DEFAULT_OPTIONS.slowModel.windowMs),
    latencyMs: pair('CHAOS_SLOW_LATENCY_S', DEFAULT_OPTIONS.slowModel.latencyMs),
  },
  checkpointDisk: {
    ...DEFAULT_OPTIONS.checkpointDisk,
    holdMs: pair('CHAOS_DISK_FULL_S', DEFAULT_OPTIONS.checkpointDisk.holdMs),
  },
  log,
});

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping and removing everything this run started`);
    // From here on a call of the abandoned run may fail in a timer; the cleanup must go on regardless.
    process.on('uncaughtException', (error) => log(`while stopping: ${error.message}`));
    void chaos.cleanup().finally(() => process.exit(130));
  });
}

// An error no part of the run caught must not leave its processes, mount and instance behind.
process.on('uncaughtException', (error) => {
  if (interrupted) return;
  interrupted = true;
  log(`uncaught: ${error.stack ?? error.message}; stopping and removing everything this run started`);
  process.on('uncaughtException', (e) => log(`while stopping: ${e.message}`));
  void chaos.cleanup().finally(() => process.exit(1));
});

/** The command line that reproduces this run: the knobs set in the environment, then the script. */
const command = [
  ...Object.entries(process.env)
    .filter(([k]) => k.startsWith('CHAOS_'))
    .map(([k, v]) => `${k}=${v}`),
  'npx tsx bench/chaos.ts',
].join(' ');

const letters = (ks: readonly ChaosFaultKind[]) => ks.map((k) => `(${KIND_LETTER[k]}) ${k}`).join(', ');

try {
  const result = await chaos.run();
  const everyKind = FAULT_KINDS.every((k) => kinds.includes(k));
  const full = path.join(HERE, 'results', 'chaos.json');
  const out = everyKind ? full : path.join(HERE, 'results', 'chaos-partial.json');
  if (everyKind) console.log(markdown(result));
  else {
    // Some kinds only: this run's tables, then the last run of every kind's, labelled as such, so
    // that docs/benchmarks.md (bench/run-all.ts copies these tables) keeps the figures of the other kinds.
    const earlier = (await readFile(full, 'utf8').then(JSON.parse, () => undefined)) as
      (ChaosResult & { command?: string }) | undefined;
    console.log(
      `> This run injected only ${letters(kinds)}: \`${command}\`, ${result.startedAt.slice(0, 10)}. ` +
        (earlier
          ? `The tables after its own are an earlier run's (\`${earlier.command ?? 'npx tsx bench/chaos.ts'}\`, ` +
            `${earlier.startedAt.slice(0, 10)}, kinds ${letters(earlier.options.kinds)}), kept for the kinds this run did not inject.`
          : 'No earlier run of the other kinds is recorded (bench/results/chaos.json).'),
    );
    console.log('');
    console.log(markdown(result));
    if (earlier) {
      console.log('');
      console.log(
        `> Earlier run, ${earlier.startedAt.slice(0, 10)} (bench/results/chaos.json), kinds ${letters(earlier.options.kinds)}:`,
      );
      console.log('');
      console.log(markdown(earlier));
    }
  }
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify({ command, totals: totals(result), ...result }, null, 2)}\n`);
  log(`wrote ${path.relative(process.cwd(), out)}`);
  process.exit(0);
} catch (error) {
  if (!interrupted) {
    log(`failed: ${(error as Error).stack ?? error}`);
    process.exit(1);
  }
}
