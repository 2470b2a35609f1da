/**
 * The benchmarks' own code, end to end, on every entry: the 800 BFCL-V4 multi-turn entries (base,
 * miss_func, miss_param, long_context; 200 each) replayed from their ground truth through BFCL's
 * OpenAI function-calling handler and multi_turn_checker, and every tau2-bench base task of airline,
 * retail and telecom replayed from its gold actions through tau2's orchestrator (run_task, LLM agent
 * and LLM user simulator) and evaluate_simulation. The policy (and the user simulator) is the
 * scripted model server replaying the plans of the evaluation worker's own loader
 * (workers/evaluation/mockworld_eval/replay.py, the same as its pytest suite and the integration
 * test); each trial runs as the worker runs it, in a process of its own forked from a template that
 * imported the benchmarks (bench/evaluation-replay.py). Every entry is expected to score valid
 * (BFCL) or 1.0 (tau2): one that does not is listed with its id and the checker's reason.
 *
 * Prints per benchmark and category/domain: entries, valid, wall time, and CPU seconds per trial
 * (the trial process's own CPU; the model server's CPU is counted separately), and writes
 * bench/results/evaluation-replay.json. Needs .venv-eval (bash deploy/eval-venv.sh); no database,
 * no Temporal (the trials' storage and scheduling are the integration test's part).
 *
 * Run: `npx tsx bench/evaluation-replay.ts`.
 * Knobs: BENCH_EVAL_LIMIT (entries per category/domain; default all), BENCH_EVAL_JOBS (trials at
 * once; default 2, this machine's cores), BENCH_EVAL_GROUPS (e.g. `bfcl/multi_turn_base,tau2/airline`;
 * default all seven), BENCH_EVAL_PLANS (a plans file an earlier `evaluation-replay.py plan` wrote:
 * planning all 1,078 entries costs minutes of CPU; default: plan now), BENCH_EVAL_MINUTES (start no
 * trial after this many minutes; the trials take the groups in turn, so a stopped run has measured
 * every group, and the figures then include the projected wall time of the whole set).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../deploy/paths.js';
import { evalReplayScript, type ReplayPlans } from '../testkit/eval-replay.js';
import { startModelServer } from '../testkit/model-server.js';
import { writeResults } from './measure/results.js';

const LIMIT = Number(process.env.BENCH_EVAL_LIMIT ?? 0);
const JOBS = Number(process.env.BENCH_EVAL_JOBS ?? 2);
const GROUPS = process.env.BENCH_EVAL_GROUPS ?? '';
const PLANS = process.env.BENCH_EVAL_PLANS;
const MINUTES = Number(process.env.BENCH_EVAL_MINUTES ?? 0);
const PYTHON = path.join(REPO_ROOT, '.venv-eval', 'bin', 'python');
const DRIVER = path.join(REPO_ROOT, 'bench', 'evaluation-replay.py');

interface TrialResult {
  benchmark: 'bfcl' | 'tau2';
  group: string;
  taskId: string;
  reward: number;
  valid: boolean;
  termination: string;
  steps: number;
  failure: string | null;
  detail: string | null;
  rewardInfo: unknown;
  wallSeconds: number;
  cpuSeconds: number;
}

interface GroupFigures {
  benchmark: string;
  group: string;
  /** Entries of the group in the set, and how many of them were run (all, unless the run was stopped). */
  entries: number;
  run: number;
  valid: number;
  cpuSecondsPerTrial: number;
  wallSecondsPerTrial: number;
  modelCallsPerTrial: number;
}

/** Runs the driver; resolves with its stdout lines (each `run` line is a trial's result). */
function driver(args: string[], onLine?: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [DRIVER, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => onLine?.(line));
    child.once('error', (error) =>
      reject(new Error(`cannot start ${PYTHON} (${error.message}): run bash deploy/eval-venv.sh`)),
    );
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`evaluation-replay.py ${args[0]} exited with ${code}`)),
    );
  });
}

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-eval-bench-'));
  const plansFile = PLANS ?? path.join(dir, 'plans.json');
  try {
    const planArgs = ['plan', '--out', plansFile];
    if (LIMIT > 0) planArgs.push('--limit', String(LIMIT));
    if (GROUPS) planArgs.push('--groups', GROUPS);
    if (!PLANS) await driver(planArgs);
    const planned = JSON.parse(await readFile(plansFile, 'utf8')) as {
      plans: ReplayPlans;
      entries: { benchmark: string; group: string; taskId: string }[];
    };
    const { plans } = planned;
    const models = await startModelServer({ script: evalReplayScript(plans) });
    const serverCpuBefore = process.cpuUsage();
    const results: TrialResult[] = [];
    const started = Date.now();
    const runArgs = ['run', '--url', models.url, '--entries', plansFile, '--jobs', String(JOBS)];
    if (MINUTES > 0) runArgs.push('--stop-after', String(MINUTES * 60));
    try {
      await driver(runArgs, (line) => results.push(JSON.parse(line) as TrialResult));
    } finally {
      await models.close();
    }
    const totalWall = (Date.now() - started) / 1000;
    const serverCpu = process.cpuUsage(serverCpuBefore);
    const serverCpuSeconds = (serverCpu.user + serverCpu.system) / 1e6;

    const groups: GroupFigures[] = [];
    const groupKeys = [...new Set(planned.entries.map((e) => `${e.benchmark}/${e.group}`))];
    for (const key of groupKeys) {
      const [benchmark, group] = key.split('/') as [string, string];
      const rows = results.filter((r) => r.benchmark === benchmark && r.group === group);
      const sum = (pick: (r: TrialResult) => number) => rows.reduce((s, r) => s + pick(r), 0);
      const n = Math.max(1, rows.length);
      groups.push({
        benchmark,
        group,
        entries: planned.entries.filter((e) => e.benchmark === benchmark && e.group === group).length,
        run: rows.length,
        valid: rows.filter((r) => r.valid).length,
        cpuSecondsPerTrial: round(sum((r) => r.cpuSeconds) / n),
        wallSecondsPerTrial: round(sum((r) => r.wallSeconds) / n),
        modelCallsPerTrial: round(sum((r) => r.steps) / n, 1),
      });
    }
    const findings = results
      .filter((r) => !r.valid)
      .map((r) => ({
        benchmark: r.benchmark,
        group: r.group,
        taskId: r.taskId,
        reward: r.reward,
        termination: r.termination,
        reason: r.detail ?? r.failure,
        rewardInfo: r.rewardInfo,
      }));

    const trials = results.length;
    const complete = trials === planned.entries.length;
    // The trials took the groups in turn, so the run's throughput holds for the whole set.
    const projectedWall = (totalWall * planned.entries.length) / Math.max(1, trials);
    console.log(
      `| benchmark | category / domain | entries | run | valid | CPU s / trial | wall s / trial | model calls / trial |`,
    );
    console.log(`|---|---|--:|--:|--:|--:|--:|--:|`);
    for (const g of groups)
      console.log(
        `| ${g.benchmark} | ${g.group} | ${g.entries} | ${g.run} | ${g.valid} | ${g.cpuSecondsPerTrial} | ${g.wallSecondsPerTrial} | ${g.modelCallsPerTrial} |`,
      );
    console.log(
      `| all | | ${planned.entries.length} | ${trials} | ${results.filter((r) => r.valid).length} | ` +
        `${round(results.reduce((s, r) => s + r.cpuSeconds, 0) / trials)} | ` +
        `${round(results.reduce((s, r) => s + r.wallSeconds, 0) / trials)} | ` +
        `${round(results.reduce((s, r) => s + r.steps, 0) / trials, 1)} |`,
    );
    console.log('');
    console.log(
      `> Wall time: ${round(totalWall / 60, 1)} min for ${trials} trials` +
        (complete
          ? '.'
          : ` (stopped after BENCH_EVAL_MINUTES=${MINUTES}; the whole set of ${planned.entries.length} ` +
            `projects to ${round(projectedWall / 60, 1)} min at this throughput).`),
    );
    console.log(
      `> ${JOBS} trials at once on ${os.cpus().length} cores; each trial in its own process forked from a template that ` +
        `imported the benchmarks. The scripted model server used ${round(serverCpuSeconds / trials, 3)} CPU s per trial besides. ` +
        (findings.length
          ? `${findings.length} entr${findings.length === 1 ? 'y' : 'ies'} did not replay valid: ` +
            findings.map((f) => `${f.group}/${f.taskId} (${f.reason})`).join('; ')
          : 'Every entry replayed valid.'),
    );
    await writeResults('evaluation-replay', {
      date: new Date().toISOString(),
      cores: os.cpus().length,
      jobs: JOBS,
      limitPerGroup: LIMIT || null,
      complete,
      trialsPlanned: planned.entries.length,
      trialsRun: trials,
      totalWallSeconds: round(totalWall, 1),
      projectedWallSecondsForAll: round(projectedWall, 1),
      modelServerCpuSecondsPerTrial: round(serverCpuSeconds / trials, 4),
      groups,
      findings,
    });
    if (findings.length) process.exitCode = 1;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
