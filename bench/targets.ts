/**
 * The performance targets (issue 19), each figure read from the results the benchmarks just wrote
 * (bench/results/*.json) and printed beside its target, with the machine's load during the run
 * that measured it. Run by `npm run bench` after the benchmarks it reads.
 *
 * Run alone: `npx tsx bench/targets.ts` (reads the last results).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { RESULTS_DIR } from './measure/results.js';

interface Target {
  readonly figure: string;
  readonly value: number | undefined;
  /** How the figure compares with its bound: at least or at most. */
  readonly bound: '≥' | '≤';
  readonly target: number;
  readonly unit?: string;
  /** The value is a lower bound (the plain path never finished). */
  readonly atLeast?: boolean;
  /** Load average (1 min) at the start and end of the run that measured it. */
  readonly load?: readonly [number, number];
  readonly source: string;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function results(name: string): Promise<Json | undefined> {
  try {
    return JSON.parse(await readFile(path.join(RESULTS_DIR, `${name}.json`), 'utf8')) as Json;
  } catch {
    return undefined;
  }
}

const sum = (values: Record<string, number> | undefined, keys: readonly string[]) =>
  keys.reduce((total, key) => total + (values?.[key] ?? 0), 0);

async function modelLayer(): Promise<Target[]> {
  const r = await results('model-layer');
  const cell = (latency: number, callers: number) =>
    (r?.cells as Json[] | undefined)?.find(
      (c) => c.upstreamLatencyMs === latency && c.concurrency === callers,
    );
  const load = (c: Json | undefined) =>
    c?.layer?.loadAvg ? ([c.raw.loadAvg.start, c.layer.loadAvg.end] as const) : undefined;
  const at256 = cell(50, 256);
  const at16 = cell(0, 16);
  const source = 'bench/model-layer.ts';
  return [
    {
      figure: 'model layer calls/s ÷ raw, 256 callers, 50 ms',
      value: at256 && at256.layer.callsPerSecond / at256.raw.callsPerSecond,
      bound: '≥',
      target: 0.9,
      load: load(at256),
      source,
    },
    {
      figure: 'model layer added latency p50, 256 callers, 50 ms',
      value: at256?.addedP50Ms,
      bound: '≤',
      target: 5,
      unit: 'ms',
      load: load(at256),
      source,
    },
    {
      figure: 'model layer calls/s ÷ raw, 0 ms, 16 callers',
      value: at16 && at16.layer.callsPerSecond / at16.raw.callsPerSecond,
      bound: '≥',
      target: 0.7,
      load: load(at16),
      source,
    },
  ];
}

async function synthesis(): Promise<Target[]> {
  const r = await results('synthesis');
  const cell = (r?.cells as Json[] | undefined)?.find((c) => c.upstreamLatencyMs === 50);
  const load = cell && ([cell.temporal.loadAvgAtStart, cell.plain.loadAvgAtEnd] as const);
  return [
    {
      figure: 'synthesis Temporal ÷ plain tasks/min, 50 ms',
      value: cell && cell.temporal.tasksPerMin / cell.plain.tasksPerMin,
      bound: '≥',
      target: 0.7,
      load,
      source: 'bench/synthesis.ts',
    },
    {
      figure: 'synthesis history events per task (mean)',
      value: cell?.temporal.history?.allTasks?.eventsMean,
      bound: '≤',
      target: 25,
      load,
      source: 'bench/synthesis.ts',
    },
  ];
}

async function grpo(): Promise<Target[]> {
  const r = await results('grpo');
  const cell = (r?.throughput as Json[] | undefined)?.find((c) => c.upstreamLatencyMs === 50);
  const cpu = (path: Json | undefined) =>
    path && sum(path.cpuMs, ['bench', 'temporalServer', 'modelServer', 'postgres']) / path.rollouts;
  const temporal = cpu(cell?.temporal);
  const plain = cpu(cell?.plain);
  return [
    {
      figure: 'GRPO CPU per rollout, Temporal ÷ plain, all processes (50 ms)',
      value: temporal !== undefined && plain ? temporal / plain : undefined,
      bound: '≤',
      target: 1.25,
      load: cell && ([cell.temporal.loadAvg.start, cell.plain.loadAvg.end] as const),
      source: 'bench/grpo.ts',
    },
  ];
}

async function embeddedModel(): Promise<Target[]> {
  const r = await results('embedded-model');
  const ratios = r?.ratios as Json | undefined;
  const load = r?.loadAvg ? ([r.loadAvg.start, r.loadAvg.end] as const) : undefined;
  return [
    {
      figure: 'embedded server ÷ raw node-llama-cpp, 1 request',
      value: ratios?.serverOverRaw,
      bound: '≥',
      target: 0.95,
      load,
      source: 'bench/embedded-model.ts',
    },
    {
      figure: 'embedded server tokens/s, 4 concurrent ÷ 1 request',
      value: ratios?.concurrent4OverOne,
      bound: '≥',
      target: 1.5,
      load,
      source: 'bench/embedded-model.ts',
    },
  ];
}

async function goodput(): Promise<Target[]> {
  const r = await results('goodput');
  const cells = (r?.cells as Json[] | undefined) ?? [];
  const load = (c: Json) => [c.temporal.loadAvg.start, c.plain.loadAvg.end] as const;
  // What an uninterrupted plain iteration needs: its rollout phase where one completed, plus the
  // mean start-up of its restarted attempts.
  const completed = cells.find((c) => c.plain.completed && c.plain.completedAttemptRolloutS);
  const startUps = cells.flatMap((c) =>
    (c.plain.attempts as Json[]).filter((a) => a.startedAt > 0).map((a) => a.readyAt - a.startedAt),
  );
  const needS = completed
    ? completed.plain.completedAttemptRolloutS + startUps.reduce((x, y) => x + y, 0) / (startUps.length || 1)
    : undefined;
  return cells.map((c) => {
    // Between kills closer than an uninterrupted iteration, the plain loop never completes however
    // long it runs: its goodput is 0 and the ratio infinite, not the floor its cap happens to give.
    const never = !c.plain.completed && needS !== undefined && needS > c.intervalS;
    return {
      figure:
        `goodput under faults (CPU worker SIGKILLed every ${c.intervalS} s), Temporal ÷ plain` +
        (c.plain.completed
          ? ''
          : never
            ? `: the plain loop cannot finish (an iteration needs ${needS.toFixed(1)} s, start-up included)`
            : ': the plain loop never finished its iteration, shown is the floor at its cap'),
      value: never ? Infinity : (c.ratio ?? c.ratioAtLeast),
      atLeast: !never && (c.ratio === null || c.ratio === undefined),
      bound: '≥' as const,
      target: 2,
      load: load(c),
      source: 'bench/goodput.ts',
    };
  });
}

function row(t: Target): string {
  const shown =
    t.value === Infinity
      ? '∞'
      : t.value === undefined || !Number.isFinite(t.value)
        ? 'not measured'
        : `${t.atLeast ? '≥ ' : ''}${t.value >= 100 ? t.value.toFixed(0) : t.value.toFixed(2)}${t.unit ? ` ${t.unit}` : ''}`;
  const met =
    t.value === undefined || Number.isNaN(t.value)
      ? '-'
      : (t.bound === '≥' ? t.value >= t.target : t.value <= t.target)
        ? 'met'
        : 'missed';
  const load = t.load ? `${t.load[0].toFixed(1)}→${t.load[1].toFixed(1)}` : '-';
  return `| ${t.figure} | ${shown} | ${t.bound} ${t.target}${t.unit ? ` ${t.unit}` : ''} | ${met} | ${load} | \`${t.source}\` |`;
}

const targets = [
  ...(await modelLayer()),
  ...(await synthesis()),
  ...(await grpo()),
  ...(await embeddedModel()),
  ...(await goodput()),
];
console.log(
  [
    '| figure | measured | target | | load avg (start→end of its run) | from |',
    '|---|---:|---:|---|---:|---|',
    ...targets.map(row),
  ].join('\n'),
);
