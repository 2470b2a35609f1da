import { curveChartSpec } from '../../activities/charts/study-charts.js';
import type { ProtocolAnalysis } from '../../activities/study/analysis/report.js';
import type { JudgeStanding } from '../../activities/study/judge-standing.js';
import { chart, html, num, page, section, table, type Fragment } from './html.js';
import { runHeader, usageSection, type TemporalUi } from './runs-page.js';
import type { RoleUsageRow } from './runs-queries.js';
import type { CellRow } from './study-queries.js';

const pct = (fraction: number | null | undefined, digits = 2) =>
  fraction === null || fraction === undefined ? '—' : `${(100 * fraction).toFixed(digits)}%`;

/** A cell's state from its timestamps: started, trained (SFT done), evaluated (scored). */
const stateOf = (c: CellRow) => (c.score !== null ? 'evaluated' : c.trainedAt ? 'trained' : 'training');

/** The grid: one row per protocol and pool, one column per budget r, each cell its seeds. */
function grid(cells: readonly CellRow[]): Fragment {
  const budgets = [...new Set(cells.map((c) => c.budget))].sort((a, b) => a - b);
  const lines = [...new Set(cells.map((c) => `${c.protocol}\u0000${c.pool}`))];
  return table(
    ['protocol', 'pool (quarters)', ...budgets.map((r) => `r = ${r}`)],
    lines.map((line) => {
      const [protocol, pool] = line.split('\u0000') as [string, string];
      return [
        protocol,
        pool,
        ...budgets.map((r) => {
          const here = cells.filter(
            (c) => c.protocol === protocol && String(c.pool) === pool && c.budget === r,
          );
          return html`${here.map(
            (c) =>
              html`<div class="cell ${stateOf(c)}" title="${c.cellId}">
                s${c.seed}: ${stateOf(c)} ${c.score !== null ? pct(c.score, 1) : ''}
              </div>`,
          )}`;
        }),
      ];
    }),
    'grid',
  );
}

/** One protocol's fit: the interactive curve, the fitted law, the held-out forecasts. */
function fitSection(
  title: string,
  a: ProtocolAnalysis,
  index: number,
  samplesPerQuestion?: number,
): Fragment {
  const fit = a.fit.ok ? a.fit.value : null;
  const forecast = a.forecast.ok ? a.forecast.value : null;
  const spec = curveChartSpec({
    title: `${title} — ${a.label}`,
    label: a.label,
    budgets: a.budgets,
    samplesPerQuestion,
    fit: fit?.params ?? null,
    heldOut: forecast
      ? { params: forecast.fit.params, trainMaxR: forecast.trainMaxR, targetR: forecast.targetR }
      : null,
  });
  return html`<article class="fit" data-protocol="${a.protocol}">
    <h3>${a.label}</h3>
    ${chart(`chart-fit-${index}`, spec)}
    ${
      fit
        ? html`<p class="law">
            P(r) = P∞ − A·r<sup>−α</sup>: P∞ = ${pct(fit.params.pInf)}, A = ${num(fit.params.a)}, α =
            ${num(fit.params.alpha)}; in-sample MAE ${num(fit.maePp, 2)} pp
          </p>`
        : html`<p class="law">no fit: ${a.fit.ok ? '' : a.fit.reason}</p>`
    }
    ${
      forecast
        ? table(
            [
              'forecast of r = ' + forecast.targetR + ' from r ≤ ' + forecast.trainMaxR,
              'predicted',
              'observed',
              'error (pp)',
            ],
            [
              ['Fit', pct(forecast.fit.prediction), pct(forecast.observed), num(forecast.fit.absErrorPp, 2)],
              [
                'Carry',
                pct(forecast.carry.prediction),
                pct(forecast.observed),
                num(forecast.carry.absErrorPp, 2),
              ],
              [
                'LogLin',
                pct(forecast.logLin.prediction),
                pct(forecast.observed),
                num(forecast.logLin.absErrorPp, 2),
              ],
            ],
            'forecasts',
          )
        : html`<p class="meta">no held-out forecast: ${a.forecast.ok ? '' : a.forecast.reason}</p>`
    }
  </article>`;
}

/**
 * Whether the study's figures can be believed, above everything else on the page: a judge that
 * failed its controls and every toy role, then who decided the verdicts and the control figure.
 */
function standingSection(standing: JudgeStanding): Fragment {
  const { decidedBy, controls, controlsPassed, controlPassRate, minPassRate } = standing;
  const warnings = [
    ...(standing.reason ? [standing.reason] : []),
    ...standing.toyLabels.map((label) => `Toy figures. ${label}`),
  ];
  return section(
    'Can these figures be believed?',
    html`${warnings.map((w) => html`<p class="warning" role="alert">${w}</p>`)}
      ${table(
        ['verdicts decided by', 'count'],
        [
          ['the deterministic checker', decidedBy.checker],
          ['the LLM judge', decidedBy.judge],
          ['nobody: judge failed (never scored)', decidedBy.judgeFailed],
        ],
      )}
      <p class="meta">
        ${
          controlPassRate === null
            ? 'Judge controls: none graded (the LLM judge decided no verdict).'
            : `Judge controls: ${controlsPassed} of ${controls} passed (${pct(controlPassRate, 0)}; threshold ${pct(minPassRate, 0)}).`
        }
      </p>`,
    'standing',
  );
}

/** A scaling study: the grid of cells and, per protocol, its fit and forecasts. */
export function studyPage(input: {
  run: { runId: string; kind: string; state: string };
  ui: TemporalUi;
  cells: readonly CellRow[];
  analyses: readonly ProtocolAnalysis[];
  /** k of the scores' mean@k. */
  samplesPerQuestion?: number;
  standing: JudgeStanding;
  usage: readonly RoleUsageRow[];
}): Fragment {
  const { run } = input;
  const body = html`${runHeader(run, input.ui)} ${standingSection(input.standing)}
  ${section(`Grid (${input.cells.length} cells)`, input.cells.length ? grid(input.cells) : html`<p>No cell has started.</p>`, 'grid')}
  ${section(
    'Fits and forecasts',
    input.analyses.length
      ? html`${input.analyses.map((a, i) =>
          fitSection(`Scaling study ${run.runId}`, a, i, input.samplesPerQuestion),
        )}`
      : html`<p>No evaluated cell of the full pool yet: nothing to fit.</p>`,
    'fits',
  )}
  ${usageSection(input.usage)}`;
  return page(run.runId, [{ label: run.runId }], body);
}
