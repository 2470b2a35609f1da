/**
 * Temporal ÷ plain at a realistic model latency (1 s per call, many calls in flight): the figure
 * users feel. Runs bench/synthesis.ts (and bench/grpo.ts, throughput only) as child processes, each
 * REPEATS times at BENCH_REALISTIC_LATENCY ms, reads each repetition's results file, and prints the
 * median ratio with its range beside the CPU-bound figures (50 ms) of their main results files.
 *
 * Run: `npx tsx bench/realistic-latency.ts` (about 15 min on 2 cores). Knobs: BENCH_REPEATS (3),
 * BENCH_REALISTIC_LATENCY (1000), BENCH_TASKS (synthesis tasks, 512: several continue-as-new runs
 * of the dataset workflow, as in a long run), BENCH_REALISTIC_BENCHES (synthesis; `synthesis,grpo`
 * adds GRPO, whose warm-up run at 1 s per call has not finished within its 7-minute limit here: see
 * docs/scale.md). Writes `realistic-latency.json` in bench/results/; the repetitions' own files
 * there are removed.
 */
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { REPO_ROOT } from '../deploy/paths.js';
import { summarize, type Summary } from './measure/repeats.js';
import { RESULTS_DIR, writeResults } from './measure/results.js';

const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const LATENCY = Number(process.env.BENCH_REALISTIC_LATENCY ?? 1000);
const SYNTHESIS_TASKS = process.env.BENCH_TASKS ?? '512';
const ONLY = (process.env.BENCH_REALISTIC_BENCHES ?? 'synthesis').split(',');
const TARGET = 0.95;

interface Bench {
  readonly name: 'synthesis' | 'grpo';
  readonly unit: string;
  readonly env: Record<string, string>;
  /** Temporal, plain and ratio of the cell at `latency` in a results file. */
  read(results: Json, latency: number): { temporal: number; plain: number } | undefined;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- results files are read loosely
type Json = Record<string, any>;

const BENCHES: readonly Bench[] = [
  {
    name: 'synthesis',
    unit: 'tasks/min',
    env: { BENCH_TASKS: SYNTHESIS_TASKS },
    read: (r, latency) => {
      const cell = (r.cells as Json[]).find((c) => c.upstreamLatencyMs === latency);
      return cell && { temporal: cell.temporal.tasksPerMin, plain: cell.plain.tasksPerMin };
    },
  },
  {
    name: 'grpo',
    unit: 'rollouts/s',
    env: { BENCH_GRPO_SKIP_SCALE: '1', BENCH_GRPO_BEFORE_LATENCIES: '' },
    read: (r, latency) => {
      const cell = (r.throughput as Json[]).find((c) => c.upstreamLatencyMs === latency);
      return cell && { temporal: cell.temporal.rolloutsPerSecond, plain: cell.plain.rolloutsPerSecond };
    },
  },
];

function runBench(bench: Bench, resultsName: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', path.join('bench', `${bench.name}.ts`)], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        ...bench.env,
        BENCH_LATENCIES: String(LATENCY),
        BENCH_RESULTS_NAME: resultsName,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`bench/${bench.name}.ts exited with ${code}`)),
    );
  });
}

const readJson = async (name: string): Promise<Json> =>
  JSON.parse(await readFile(path.join(RESULTS_DIR, `${name}.json`), 'utf8')) as Json;

interface Row {
  readonly bench: string;
  readonly unit: string;
  readonly latencyMs: number;
  readonly temporal: Summary;
  readonly plain: Summary;
  readonly ratio: Summary;
}

async function measure(bench: Bench): Promise<Row> {
  const temporal: number[] = [];
  const plain: number[] = [];
  for (let i = 1; i <= REPEATS; i++) {
    const name = `realistic-latency-${bench.name}-${i}`;
    console.error(`[realistic-latency] ${bench.name} at ${LATENCY} ms, repetition ${i} of ${REPEATS}`);
    await runBench(bench, name);
    const figures = bench.read(await readJson(name), LATENCY);
    await rm(path.join(RESULTS_DIR, `${name}.json`), { force: true });
    if (!figures) throw new Error(`bench/${bench.name}.ts wrote no cell at ${LATENCY} ms`);
    temporal.push(figures.temporal);
    plain.push(figures.plain);
  }
  return {
    bench: bench.name,
    unit: bench.unit,
    latencyMs: LATENCY,
    temporal: summarize(temporal),
    plain: summarize(plain),
    ratio: summarize(temporal.map((t, i) => t / plain[i]!)),
  };
}

/** The 50 ms cell of the bench's main results file (one run: the CPU-bound worst case). */
async function cpuBound(bench: Bench): Promise<number | undefined> {
  const figures = bench.read(await readJson(bench.name).catch(() => ({})), 50);
  return figures && figures.temporal / figures.plain;
}

const range = (s: Summary, digits: number) =>
  `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;

async function main(): Promise<void> {
  const benches = BENCHES.filter((b) => ONLY.includes(b.name));
  const rows: Row[] = [];
  for (const bench of benches) rows.push(await measure(bench));
  const lines = [
    `Temporal ÷ plain at ${LATENCY} ms per model call, median (range) of ${REPEATS} runs, beside the 50 ms figure of the bench's main results`,
    '',
    `| bench | Temporal | plain | ratio at ${LATENCY} ms | target ${TARGET} | ratio at 50 ms |`,
    '|---|---:|---:|---:|---|---:|',
  ];
  for (const [i, row] of rows.entries()) {
    const at50 = await cpuBound(benches[i]!);
    lines.push(
      `| ${row.bench} (${row.unit}) | ${range(row.temporal, 1)} | ${range(row.plain, 1)} | ${range(row.ratio, 3)} | ` +
        `${row.ratio.median >= TARGET ? 'met' : 'missed'} | ${at50 === undefined ? 'n/a' : at50.toFixed(2)} |`,
    );
  }
  console.log(lines.join('\n'));
  await writeResults('realistic-latency', { latencyMs: LATENCY, repeats: REPEATS, target: TARGET, rows });
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
