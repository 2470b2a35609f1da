import type { SynthesisSummary } from '../../workflows/synthesis.js';
import type { Summary } from '../measure/repeats.js';
import type { UserCall } from './user-calls.js';

/** What one size of bench/scale.ts measured. */
export interface SizeFigures {
  readonly tasks: number;
  readonly wallMs: number;
  readonly summary: SynthesisSummary;
  /** CPU during the run, in ms: this process (the worker), the dev server, PostgreSQL. */
  readonly cpuMs: { readonly worker: number; readonly temporal: number; readonly postgres: number };
  readonly pgBytes: number;
  readonly temporalBytes: number;
  /** Runs of the parent's continue-as-new chain, and the most events one of them holds. */
  readonly parentRuns: number;
  readonly parentEventsMaxPerRun: number;
  readonly taskEventsMean: number;
  readonly peakRssMiB: { readonly worker: number; readonly temporal: number; readonly postgres: number };
  readonly userCalls: UserCall[];
}

/** The largest run grown in PostgreSQL: the user's calls on it, and a budgeted run's spend check. */
export interface AmplifiedFigures {
  readonly tasks: number;
  readonly added: Record<string, number>;
  readonly pgBytes: number;
  readonly ledgerRows: number;
  readonly userCalls: UserCall[];
  /** runSpend from the usage rollup, and the same sum over the ledger as before migration 036. */
  readonly spendCheckMs: { readonly rollup: Summary; readonly ledgerSum: Summary };
}

const f = (n: number, digits = 1) => n.toFixed(digits);
const ms = (s: Summary) => `${f(s.median, 0)} (${f(s.min, 0)}–${f(s.max, 0)})`;

/** A per-task figure and its ratio to the smallest size's. */
function perTask(sizes: readonly SizeFigures[], value: (s: SizeFigures) => number, digits = 1) {
  const base = value(sizes[0]!) / sizes[0]!.tasks;
  return sizes.map((s) => {
    const v = value(s) / s.tasks;
    return s === sizes[0] ? f(v, digits) : `${f(v, digits)} (×${f(v / base, 2)})`;
  });
}

/** The bench's Markdown tables: per-task costs by size, then the user's calls by size. */
export function renderScaleTables(sizes: readonly SizeFigures[], grown: AmplifiedFigures): string {
  const header = `| per task | ${sizes.map((s) => `${s.tasks} tasks`).join(' | ')} |`;
  const rule = `|---|${sizes.map(() => '---:').join('|')}|`;
  const row = (name: string, cells: readonly string[]) => `| ${name} | ${cells.join(' | ')} |`;
  const costs = [
    'Cost per task of a Synthesis run (ratio to the smallest size in brackets)',
    '',
    header,
    rule,
    row(
      'wall ms',
      perTask(sizes, (s) => s.wallMs),
    ),
    row(
      'CPU ms: worker',
      perTask(sizes, (s) => s.cpuMs.worker),
    ),
    row(
      'CPU ms: Temporal dev server',
      perTask(sizes, (s) => s.cpuMs.temporal),
    ),
    row(
      'CPU ms: PostgreSQL',
      perTask(sizes, (s) => s.cpuMs.postgres),
    ),
    row(
      'PostgreSQL KiB',
      perTask(sizes, (s) => s.pgBytes / 1024),
    ),
    row(
      'Temporal persistence KiB',
      perTask(sizes, (s) => s.temporalBytes / 1024),
    ),
    row(
      'task workflow events (mean of 20)',
      sizes.map((s) => f(s.taskEventsMean)),
    ),
    row(
      'parent: runs / most events in one run',
      sizes.map((s) => `${s.parentRuns} / ${s.parentEventsMaxPerRun}`),
    ),
    row(
      'peak RSS MiB: worker / dev server / PostgreSQL',
      sizes.map(
        (s) =>
          `${f(s.peakRssMiB.worker, 0)} / ${f(s.peakRssMiB.temporal, 0)} / ${f(s.peakRssMiB.postgres, 0)}`,
      ),
    ),
    row(
      'kept / rejected / failed',
      sizes.map((s) => `${s.summary.kept} / ${s.summary.rejected} / ${s.summary.failed}`),
    ),
  ];
  const names = sizes[0]!.userCalls.map((c) => c.name.replace(/--task \d+/, '--task N'));
  const pick = (calls: readonly UserCall[], i: number) => {
    const call = calls[i]!;
    return call.rssGrowthMiB ? `${ms(call.ms)}, +${f(call.rssGrowthMiB.max, 0)} MiB` : ms(call.ms);
  };
  const calls = [
    '',
    `What a user does on the finished run, ms, median (range) of 3; at ${grown.tasks} tasks the largest run grown in PostgreSQL (${grown.ledgerRows} ledger rows, ${f(grown.pgBytes / 2 ** 30, 2)} GiB)`,
    '',
    `| call | ${sizes.map((s) => `${s.tasks} tasks`).join(' | ')} | ${grown.tasks} tasks |`,
    `|---|${sizes.map(() => '---:').join('|')}|---:|`,
    ...names.map((name, i) =>
      row(name, [...sizes.map((s) => pick(s.userCalls, i)), pick(grown.userCalls, i)]),
    ),
    '',
    `A budgeted run's spend check before each task, at ${grown.tasks} tasks: ${ms(grown.spendCheckMs.rollup)} ms from ` +
      `the usage rollup, ${ms(grown.spendCheckMs.ledgerSum)} ms summing the ledger as before migration 036.`,
  ];
  return [...costs, ...calls].join('\n');
}
