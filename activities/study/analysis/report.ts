/**
 * The study report: Markdown tables and one chart per r-sweep (a Vega-Lite spec, which
 * writeStudyReport renders to SVG), from plain records (no I/O). Per
 * protocol it shows the scores by r (mean ± std over training seeds), the scaling-law fit on all
 * budgets with its in-sample MAE (seed §5.2, Mathematics protocol), the held-out forecast of
 * r = 32 from r ≤ 16 by Fit, Carry and LogLin (§5.2 Physics protocol, App. 11.2), the intrinsic
 * metrics of its pool (§7.1) and its sweep-mean gap to RS (App. 11.4); optionally the
 * matched-budget grid (§6.1).
 */
import { bucketCells, MATCHED_BUDGETS } from './budgets.js';
import { AnalysisInputError } from '../errors.js';
import { heldOutForecast, pooledForecastMae, type HeldOutForecast } from './extrapolate.js';
import { fitScalingLaw, type ScalingLawFit } from './fit.js';
import { aggregateGap, sweepMeanGap, type SweepGap } from './gap.js';
import { curveChartSpec } from '../../charts/study-charts.js';
import type { ChartSpec } from '../../charts/spec.js';
import { summarizeByBudget, type BudgetSummary, type CurvePoint } from './stats.js';
import {
  StudyReportInputSchema,
  type IntrinsicSummary,
  type MatchedBudgetSample,
  type StudyReportData,
  type StudyReportInput,
} from '../../../schemas/study-report.js';

/** A result, or why it could not be computed for this curve (e.g. too few budgets). */
export type Outcome<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/** Everything computed for one protocol. */
export interface ProtocolAnalysis {
  readonly protocol: string;
  readonly label: string;
  /** Mean ± std over seeds per budget, ascending r. */
  readonly budgets: readonly BudgetSummary[];
  /** The fit on all budgets (in-sample). */
  readonly fit: Outcome<ScalingLawFit>;
  /** The held-out forecast (fit on r ≤ trainMaxR, forecast targetR). */
  readonly forecast: Outcome<HeldOutForecast>;
  /** Sweep-mean gap to the reference protocol; null for the reference itself or no shared budget. */
  readonly gapToReference: SweepGap | null;
  readonly intrinsic: IntrinsicSummary | null;
}

/** One figure: its chart (the viewer's, rendered to SVG when the report is written). */
export interface ReportFigure {
  readonly protocol: string;
  /** A file name unique within the report, e.g. `curve-rs.svg`. */
  readonly fileName: string;
  readonly spec: ChartSpec;
}

/** The rendered report and the numbers behind it. */
export interface StudyReport {
  readonly markdown: string;
  readonly figures: readonly ReportFigure[];
  readonly analyses: readonly ProtocolAnalysis[];
}

function attempt<T>(compute: () => T): Outcome<T> {
  try {
    return { ok: true, value: compute() };
  } catch (error) {
    if (error instanceof AnalysisInputError) return { ok: false, reason: error.detail };
    throw error;
  }
}

const pct = (fraction: number, digits = 2) => (100 * fraction).toFixed(digits);
const pp = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const row = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
const table = (header: readonly string[], rows: readonly (readonly string[])[]) =>
  [row(header), row(header.map(() => '---')), ...rows.map(row)].join('\n');
const meanStd = (b: BudgetSummary) =>
  b.std === null ? `${pct(b.mean)} (n=1)` : `${pct(b.mean)} ± ${pct(b.std)}`;

/** Computes fit, forecast, gap and summaries of every curve of a validated input. */
export function analyzeStudy(data: StudyReportData): ProtocolAnalysis[] {
  const reference = data.curves.find((c) => c.protocol === data.referenceProtocol);
  const referencePoints: CurvePoint[] | null = reference ? reference.samples : null;
  return data.curves.map((curve) => {
    const points: CurvePoint[] = curve.samples;
    return {
      protocol: curve.protocol,
      label: curve.label ?? curve.protocol,
      budgets: summarizeByBudget(points),
      fit: attempt(() => fitScalingLaw(points)),
      forecast: attempt(() => heldOutForecast(points, data.forecast)),
      gapToReference:
        referencePoints && curve.protocol !== data.referenceProtocol
          ? sweepMeanGap(points, referencePoints)
          : null,
      intrinsic: curve.intrinsic ?? null,
    };
  });
}

function boundsText(fit: ScalingLawFit): string {
  const at = [
    fit.atBound.pInf ? 'P∞ = 1' : null,
    fit.atBound.a ? 'A = 0' : null,
    fit.atBound.alpha === 'min' ? 'α = 0.02' : fit.atBound.alpha === 'searchMax' ? 'α at search cap' : null,
  ].filter((s): s is string => s !== null);
  return at.length ? at.join(', ') : 'none';
}

function matchedBudgetTable(samples: readonly MatchedBudgetSample[]): string {
  const rows = MATCHED_BUDGETS.map((budget) => {
    const cells = bucketCells(budget).map((c) => {
      const runs = samples.filter((s) => s.q === c.q && s.r === c.r);
      const summary = runs.length ? summarizeByBudget(runs)[0]! : null;
      return { c, summary };
    });
    const measured = cells.filter((x) => x.summary !== null);
    const best = measured.length
      ? measured.reduce((a, b) => (b.summary!.mean > a.summary!.mean ? b : a))
      : null;
    return [
      String(budget),
      ...cells.map(({ c, summary }) => (summary ? `${meanStd(summary)} (r=${c.r})` : `— (r=${c.r})`)),
      best ? `q=${best.c.q}` : '—',
    ];
  });
  return table(['B = q·r', 'Q4 (q=4)', 'Q2 (q=2)', 'Q1 (q=1)', 'best'], rows);
}

/** A file-name-safe slug of a protocol id. */
function slug(protocol: string): string {
  return (
    protocol
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'curve'
  );
}

/**
 * Renders the study report. Validates `input` with {@link StudyReportInputSchema} (a zod error
 * names every bad path). Curves too short for a fit or a forecast still get their score row;
 * their fit/forecast cells say why they are missing.
 */
export function renderStudyReport(input: StudyReportInput): StudyReport {
  const data = StudyReportInputSchema.parse(input);
  const analyses = analyzeStudy(data);
  const md: string[] = [`# ${data.title}`, ''];
  md.push(
    `Scores are mean@${data.samplesPerQuestion} in %, mean ± sample std over training seeds. Errors and gaps are in percentage points (pp).`,
    '',
  );
  md.push(...scoreSection(analyses));
  md.push(...fitSection(analyses));
  md.push(...forecastSection(data, analyses));
  md.push(...intrinsicSection(data, analyses));
  if (data.matchedBudget && data.matchedBudget.length) {
    md.push('## Matched-budget buckets B = q·r', '');
    md.push(
      'Q1 ⊂ Q2 ⊂ Q4 hold a quarter, a half and all of the seed questions; each bucket has |Q4|·B/4 examples.',
      '',
    );
    md.push(matchedBudgetTable(data.matchedBudget), '');
  }
  const figures = reportFigures(data, analyses);
  md.push('## Figures', '');
  for (const f of figures) md.push(`- ${f.protocol}: \`${f.fileName}\``);
  md.push('');
  return { markdown: md.join('\n'), figures, analyses };
}

/** The report's "Score by response budget" section: one row per protocol, one column per budget. */
function scoreSection(analyses: readonly ProtocolAnalysis[]): string[] {
  const allR = [...new Set(analyses.flatMap((a) => a.budgets.map((b) => b.r)))].sort((a, b) => a - b);
  return [
    '## Score by response budget r',
    '',
    table(
      ['protocol', ...allR.map((r) => `r=${r}`)],
      analyses.map((a) => [
        a.label,
        ...allR.map((r) => {
          const b = a.budgets.find((x) => x.r === r);
          return b ? meanStd(b) : '—';
        }),
      ]),
    ),
    '',
  ];
}

/** The report's scaling-law fit section: each curve's fitted parameters, or why it has none. */
function fitSection(analyses: readonly ProtocolAnalysis[]): string[] {
  return [
    '## Scaling-law fit P(r) = P∞ − A·r^−α on all budgets',
    '',
    'Bounds: P∞ ≤ 1, A ≥ 0, α ≥ 0.02. MAE is in-sample over the fitted budgets.',
    '',
    table(
      ['protocol', 'P∞ (%)', 'A (%)', 'α', 'at bound', 'MAE (pp)'],
      analyses.map((a) =>
        a.fit.ok
          ? [
              a.label,
              pct(a.fit.value.params.pInf),
              pct(a.fit.value.params.a),
              a.fit.value.params.alpha.toFixed(3),
              boundsText(a.fit.value),
              a.fit.value.maePp.toFixed(2),
            ]
          : [a.label, '—', '—', '—', '—', `— (${a.fit.reason})`],
      ),
    ),
    '',
  ];
}

/** The report's held-out forecast section: Fit, Carry and LogLin against the observed score, pooled. */
function forecastSection(data: StudyReportData, analyses: readonly ProtocolAnalysis[]): string[] {
  const { trainMaxR, targetR } = data.forecast;
  const forecasts = analyses.flatMap((a) => (a.forecast.ok ? [a.forecast.value] : []));
  const forecastRows = analyses.map((a) => {
    if (!a.forecast.ok) return [a.label, '—', '—', '—', '—', '—', '—', `— (${a.forecast.reason})`];
    const f = a.forecast.value;
    return [
      a.label,
      pct(f.observed),
      pct(f.fit.prediction),
      f.fit.absErrorPp.toFixed(2),
      pct(f.carry.prediction),
      f.carry.absErrorPp.toFixed(2),
      pct(f.logLin.prediction),
      f.logLin.absErrorPp.toFixed(2),
    ];
  });
  if (forecasts.length) {
    const pooled = pooledForecastMae(forecasts);
    forecastRows.push([
      `pooled MAE (${pooled.cells} curves)`,
      '',
      '',
      pooled.fitPp.toFixed(2),
      '',
      pooled.carryPp.toFixed(2),
      '',
      pooled.logLinPp.toFixed(2),
    ]);
  }
  const header = [
    'protocol',
    'observed (%)',
    'Fit (%)',
    'Fit err (pp)',
    'Carry (%)',
    'Carry err (pp)',
    'LogLin (%)',
    'LogLin err (pp)',
  ];
  return [
    `## Held-out forecast of r = ${targetR} from r ≤ ${trainMaxR}`,
    '',
    `Fit: the scaling law fit on r ≤ ${trainMaxR}. Carry: the r = ${trainMaxR} score unchanged. ` +
      `LogLin: a least-squares line in score vs log r over r ≤ ${trainMaxR}. Error: |observed − forecast| (pp).`,
    '',
    table(header, forecastRows),
    '',
  ];
}

/** The report's intrinsic-metrics section, with each curve's gap to the reference protocol. */
function intrinsicSection(data: StudyReportData, analyses: readonly ProtocolAnalysis[]): string[] {
  const md: string[] = [];
  const reference = analyses.find((a) => a.protocol === data.referenceProtocol);
  md.push(`## Intrinsic metrics and gap to ${reference ? reference.label : data.referenceProtocol}`, '');
  md.push(
    'Jaccard distance: mean pairwise token-set distance across the responses of a question, averaged over questions. ' +
      'Noise: share of pool responses with a wrong final answer. Rewrite: share of wrong → check → fix traces. ' +
      'Gap: mean over the budgets both curves measured of the score difference.',
    '',
  );
  const opt = (v: number | null | undefined, f: (x: number) => string) =>
    v === null || v === undefined ? '—' : f(v);
  md.push(
    table(
      ['protocol', 'Jaccard distance', 'noise (%)', 'rewrite (%)', 'pool r', 'gap (pp)', 'budgets'],
      analyses.map((a) => [
        a.label,
        opt(a.intrinsic?.jaccardDistance, (x) => x.toFixed(3)),
        opt(a.intrinsic?.correctnessNoise, (x) => pct(x, 1)),
        opt(a.intrinsic?.rewriteShare, (x) => pct(x, 1)),
        opt(a.intrinsic?.poolR, String),
        a.protocol === data.referenceProtocol
          ? 'reference'
          : a.gapToReference
            ? pp(a.gapToReference.gapPp)
            : '—',
        a.gapToReference ? a.gapToReference.perBudget.map((g) => g.r).join(', ') : '—',
      ]),
    ),
    '',
  );
  const gaps = analyses.flatMap((a) => (a.gapToReference ? [a.gapToReference] : []));
  if (gaps.length) {
    const aggregate = aggregateGap(gaps);
    md.push(
      `Aggregate gap over all ${aggregate.points} method–budget points: ${pp(aggregate.gapPp)} pp.`,
      '',
    );
  } else if (!reference) {
    md.push(`No curve of the reference protocol \`${data.referenceProtocol}\`: gaps not computed.`, '');
  }
  return md;
}

/** One curve figure per protocol, each under a file name of its own. */
function reportFigures(data: StudyReportData, analyses: readonly ProtocolAnalysis[]): ReportFigure[] {
  const { trainMaxR, targetR } = data.forecast;
  const used = new Set<string>();
  return analyses.map((a) => {
    let name = `curve-${slug(a.protocol)}.svg`;
    for (let i = 2; used.has(name); i++) name = `curve-${slug(a.protocol)}-${i}.svg`;
    used.add(name);
    const spec = curveChartSpec({
      title: `${data.title} — ${a.label}`,
      label: a.label,
      budgets: a.budgets,
      samplesPerQuestion: data.samplesPerQuestion,
      fit: a.fit.ok ? a.fit.value.params : null,
      heldOut: a.forecast.ok ? { params: a.forecast.value.fit.params, trainMaxR, targetR } : null,
    });
    return { protocol: a.protocol, fileName: name, spec };
  });
}
