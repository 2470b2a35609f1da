/**
 * Runs every benchmark of the project, one after the other (they share 2 cores; running them
 * together would measure each other), and writes their Markdown tables into docs/benchmarks.md between
 * the `bench:start` / `bench:end` markers and into bench/results/summary.md.
 *
 * Run: `npm run bench` (or `npx tsx bench/run-all.ts [name ...]` for some of them).
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../deploy/paths.js';

/** The benchmarks, in docs/benchmarks.md order, with what each measures. */
const BENCHMARKS = [
  { name: 'model-layer', title: 'Model layer against the test model server (calls/s, added latency)' },
  { name: 'synthesis', title: 'Synthesis through Temporal against a plain in-process loop' },
  { name: 'embedded-model', title: 'Embedded model: server against raw node-llama-cpp (tokens/s)' },
  {
    name: 'grpo',
    title: 'GRPO: histories at batch 128 × 16, rollouts through Temporal against a plain loop',
  },
  {
    name: 'goodput',
    title:
      'Goodput under faults: a GRPO iteration with its rollout process SIGKILLed every 30 s, Temporal against a plain loop',
  },
  {
    name: 'worker-memory',
    title:
      'CPU worker memory at 1,024 rollouts in flight; model calls saved by the cache and the tool mapping',
  },
  {
    name: 'study',
    title: 'Scaling study: rejection sampling on the sample pool, exact-match fast path',
  },
  {
    name: 'chaos',
    title: 'Chaos: kills, restarts, a slow model and a full disk under a synthesis run and a GRPO run',
  },
  {
    name: 'batch',
    title: 'Batch mode: the same Synthesis with its judges and teacher stages online and in batch jobs',
  },
  {
    name: 'scale',
    title:
      'Scale: cost per task of a Synthesis run from 1,000 tasks up, and what a user waits for at 100,000',
  },
  {
    name: 'realistic-latency',
    title: 'Synthesis through Temporal against a plain loop at 1 s per model call (the figure users feel)',
  },
  // Last: it reads the figures the benchmarks above just wrote to bench/results/.
  { name: 'targets', title: 'Performance targets: each figure beside its target' },
] as const;

function run(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      out += chunk.toString();
    });
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${script} exited with ${code}`)),
    );
  });
}

/**
 * The Markdown a benchmark printed for docs/benchmarks.md: its tables (consecutive lines starting with
 * `|`) and its notes (consecutive lines starting with `> `), in order.
 */
function tables(output: string): string[] {
  const found: string[] = [];
  let current: string[] = [];
  let kind: '|' | '>' | undefined;
  for (const line of [...output.split('\n'), '']) {
    const lineKind = line.startsWith('|') ? '|' : line.startsWith('> ') ? '>' : undefined;
    if (current.length && lineKind !== kind) {
      found.push(current.join('\n'));
      current = [];
    }
    if (lineKind) current.push(line);
    kind = lineKind;
  }
  return found;
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const readmePath = path.join(REPO_ROOT, 'docs', 'benchmarks.md');
  const readme = await readFile(readmePath, 'utf8');
  const sections: string[] = [];
  for (const bench of BENCHMARKS) {
    const title = bench.title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); // literal, parentheses included
    const previous = new RegExp(`(### ${title}[\\s\\S]*?)(?=\\n### |$)`).exec(
      readme.slice(readme.indexOf('<!-- bench:start -->'), readme.indexOf('<!-- bench:end -->')),
    );
    if (wanted.length && !wanted.includes(bench.name)) {
      if (previous) sections.push(previous[1]!.trim()); // keep the last published figures
      continue;
    }
    console.error(`\n== bench/${bench.name}.ts`);
    const output = await run(path.join('bench', `${bench.name}.ts`));
    const date = new Date().toISOString().slice(0, 10);
    sections.push(
      [
        `### ${bench.title}`,
        '',
        `\`npx tsx bench/${bench.name}.ts\`, ${date}, ${os.cpus().length} cores`,
        '',
        ...tables(output).flatMap((t) => [t, '']),
      ]
        .join('\n')
        .trim(),
    );
  }
  const body = sections.join('\n\n');
  await writeFile(path.join(REPO_ROOT, 'bench', 'results', 'summary.md'), `${body}\n`);
  const start = readme.indexOf('<!-- bench:start -->');
  const end = readme.indexOf('<!-- bench:end -->');
  if (start < 0 || end < 0)
    throw new Error('docs/benchmarks.md lacks the <!-- bench:start --> / <!-- bench:end --> markers');
  await writeFile(readmePath, `${readme.slice(0, start)}<!-- bench:start -->\n${body}\n${readme.slice(end)}`);
  console.error('\ndocs/benchmarks.md and bench/results/summary.md updated');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
