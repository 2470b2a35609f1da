/**
 * Chaos benchmark: a synthesis run and a GRPO run on a private stack (own Temporal dev server and
 * db file, own PostgreSQL database, scripted model servers with 20% random faults, two CPU worker
 * processes, the Python trainer worker and policy server) while CPU workers and the trainer are
 * SIGKILLed, the Temporal server is crashed and restarted, and PostgreSQL is restarted, each at
 * seeded random points. Then audits the database, histories and checkpoints and prints what was
 * lost, duplicated, applied twice or paid twice, and how long each kind of fault took to recover.
 *
 * Run: `npx tsx bench/chaos.ts` (about 10–15 min at the defaults on 2 cores). Prints Markdown
 * tables and writes bench/results/chaos.json. Knobs (environment):
 *   CHAOS_FAULTS_PER_KIND (10)      faults of each kind (a)–(d)
 *   CHAOS_SEED (1)                  seeds the fault schedule, the victims and the model faults
 *   CHAOS_KINDS (all)               comma list of cpu-worker-kill, trainer-kill, temporal-restart, postgres-restart
 *   CHAOS_MEAN_GAP_S (30)           mean seconds between two faults of one kind (kinds overlap)
 *   CHAOS_MODEL_FAULT_PROBABILITY (0.2), CHAOS_MODEL_FAULT_KINDS (rate-limit,server-error,hang,truncated-body,malformed-body)
 *   CHAOS_SYNTHESIS_TASKS (20), CHAOS_GRPO_ITERATIONS (3), CHAOS_GRPO_TASKS (2), CHAOS_GRPO_ROLLOUTS (4)
 *   CHAOS_TRAINER_IN_STEP_KILLS (2) trainer kills that wait for a trainer step to be running
 *   CHAOS_PG_MODE (fast)            pg_ctlcluster shutdown mode of the restart: fast or immediate
 *   CHAOS_MODEL_GATEWAY (1)         0: CPU workers call the model servers themselves instead of through
 *                                   `mockworld gateway`, and an answer on the wire at a kill is paid again
 *   CHAOS_QUIET_WAIT_S (300)        PostgreSQL restarts break other test runs: wait this long for none
 *
 * PostgreSQL is the machine's own: the run waits until no other vitest or bench process is on the
 * machine before it starts, and postpones a restart while one appears. Everything started here is
 * stopped and removed at the end, on failure and on SIGINT/SIGTERM (PostgreSQL is left running).
 */
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FaultKind } from '../testkit/model-server.js';
import { createChaos, DEFAULT_OPTIONS, FAULT_KINDS, type ChaosFaultKind } from '../testkit/chaos/harness.js';
import { markdown, totals } from '../testkit/chaos/report.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const list = <T extends string>(name: string, fallback: readonly T[]) =>
  process.env[name]
    ? (process.env[name]!.split(',')
        .map((x) => x.trim())
        .filter(Boolean) as T[])
    : fallback;

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
  },
  postgresMode: process.env.CHAOS_PG_MODE === 'immediate' ? 'immediate' : 'fast',
  modelGateway: process.env.CHAOS_MODEL_GATEWAY !== '0',
  quietWaitMs: num('CHAOS_QUIET_WAIT_S', DEFAULT_OPTIONS.quietWaitMs / 1000) * 1000,
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

/** The command line that reproduces this run: the knobs set in the environment, then the script. */
const command = [
  ...Object.entries(process.env)
    .filter(([k]) => k.startsWith('CHAOS_'))
    .map(([k, v]) => `${k}=${v}`),
  'npx tsx bench/chaos.ts',
].join(' ');

try {
  const result = await chaos.run();
  const table = markdown(result);
  console.log(table);
  const out = path.join(HERE, 'results', 'chaos.json');
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
