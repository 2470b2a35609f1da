/**
 * One standalone SVG per r-sweep: x = r on a log2 axis, the mean score of each budget with an
 * error bar of ± one sample std over training seeds, the scaling-law fit drawn as a curve, and
 * optionally the held-out fit (r ≤ trainMaxR) extended to the target budget. Plain strings, no
 * library; every text is XML-escaped.
 */
import { predictScalingLaw, type ScalingLawParams } from './fit.js';
import type { BudgetSummary } from './stats.js';

/** What one curve's figure shows. Scores are fractions; the figure shows percent. */
export interface CurvePlotInput {
  /** Figure title, e.g. `Physics — RS`. */
  readonly title: string;
  /** Legend name of the measured series. */
  readonly label: string;
  /** Per-budget mean ± std over seeds, any order. */
  readonly budgets: readonly BudgetSummary[];
  /** The fit on all budgets, drawn solid over the measured range; null: not drawn. */
  readonly fit: ScalingLawParams | null;
  /** The held-out fit, drawn dashed from the smallest r to `targetR`; null/absent: not drawn. */
  readonly heldOut?: {
    readonly params: ScalingLawParams;
    readonly trainMaxR: number;
    readonly targetR: number;
  } | null;
}

const WIDTH = 640;
const HEIGHT = 440;
const MARGIN = { left: 72, right: 24, top: 44, bottom: 112 } as const;
const CURVE_SAMPLES = 120;

/** Escapes text for XML content and attribute values. */
export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const num = (v: number): string => (Math.round(v * 100) / 100).toString();

/** Tick step 1, 2 or 5 × 10^k giving about `target` ticks over `span`. */
function niceStep(span: number, target: number): number {
  const raw = span / target;
  const power = 10 ** Math.floor(Math.log10(raw));
  const m = raw / power;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * power;
}

/** Renders the figure of one curve as a standalone SVG document. */
export function renderCurveSvg(input: CurvePlotInput): string {
  const budgets = [...input.budgets].sort((a, b) => a.r - b.r);
  const rs = budgets.map((b) => b.r);
  const rMin = Math.min(...rs);
  const rMax = Math.max(...rs, input.heldOut?.targetR ?? -Infinity);

  const sample = (params: ScalingLawParams, from: number, to: number) =>
    Array.from({ length: CURVE_SAMPLES + 1 }, (_, i) => {
      const r = 2 ** (Math.log2(from) + ((Math.log2(to) - Math.log2(from)) * i) / CURVE_SAMPLES);
      return { r, pct: 100 * predictScalingLaw(params, r) };
    });
  const fitCurve = input.fit ? sample(input.fit, rMin, Math.max(...rs)) : [];
  const heldOutCurve = input.heldOut ? sample(input.heldOut.params, rMin, input.heldOut.targetR) : [];

  // y range (percent) over points ± std and both curves, padded; x range in log2 r, padded.
  const ys = [
    ...budgets.flatMap((b) => [100 * (b.mean - (b.std ?? 0)), 100 * (b.mean + (b.std ?? 0))]),
    ...fitCurve.map((p) => p.pct),
    ...heldOutCurve.map((p) => p.pct),
  ].filter(Number.isFinite);
  let yLo = Math.min(...ys);
  let yHi = Math.max(...ys);
  const pad = Math.max(0.5, (yHi - yLo) * 0.08);
  yLo -= pad;
  yHi += pad;
  const yStep = niceStep(yHi - yLo, 6);
  yLo = Math.floor(yLo / yStep) * yStep;
  yHi = Math.ceil(yHi / yStep) * yStep;
  const xLo = Math.log2(rMin) - 0.35;
  const xHi = Math.log2(rMax) + 0.35;

  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const px = (r: number) => MARGIN.left + ((Math.log2(r) - xLo) / (xHi - xLo)) * plotW;
  const py = (pct: number) => MARGIN.top + (1 - (pct - yLo) / (yHi - yLo)) * plotH;
  const bottom = MARGIN.top + plotH;
  const right = MARGIN.left + plotW;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12" role="img" aria-label="${escapeXml(input.title)}">`,
  );
  out.push(`<title>${escapeXml(input.title)}</title>`);
  out.push(`<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`);
  out.push(
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(input.title)}</text>`,
  );

  // Grid and y ticks.
  out.push('<g class="y-axis">');
  for (let v = yLo; v <= yHi + yStep / 1e6; v += yStep) {
    const y = num(py(v));
    out.push(`<line x1="${MARGIN.left}" y1="${y}" x2="${right}" y2="${y}" stroke="#e5e5e5"/>`);
    out.push(
      `<text x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${num(v)}</text>`,
    );
  }
  out.push('</g>');
  // x ticks at every budget shown (log2 axis).
  out.push('<g class="x-axis">');
  for (const r of [...new Set([...rs, ...(input.heldOut ? [input.heldOut.targetR] : [])])].sort(
    (a, b) => a - b,
  )) {
    const x = num(px(r));
    out.push(`<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 5}" stroke="#333333"/>`);
    out.push(`<text x="${x}" y="${bottom + 18}" text-anchor="middle">${num(r)}</text>`);
  }
  out.push('</g>');
  out.push(
    `<line x1="${MARGIN.left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#333333"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${bottom}" stroke="#333333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${bottom + 40}" text-anchor="middle">responses per question r (log2 scale)</text>`,
    `<text x="18" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 18 ${MARGIN.top + plotH / 2})">score (mean@8, %)</text>`,
  );

  const polyline = (points: { r: number; pct: number }[], cls: string, extra: string) =>
    `<polyline class="${cls}" fill="none" ${extra} points="${points.map((p) => `${num(px(p.r))},${num(py(p.pct))}`).join(' ')}"/>`;
  if (fitCurve.length) out.push(polyline(fitCurve, 'fit', 'stroke="#d62728" stroke-width="2"'));
  if (heldOutCurve.length)
    out.push(
      polyline(heldOutCurve, 'held-out-fit', 'stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 4"'),
    );

  // Points with ± std error bars.
  out.push('<g class="points">');
  for (const b of budgets) {
    const x = px(b.r);
    if (b.std !== null && b.std > 0) {
      const y1 = num(py(100 * (b.mean - b.std)));
      const y2 = num(py(100 * (b.mean + b.std)));
      out.push(
        `<line class="error-bar" x1="${num(x)}" y1="${y1}" x2="${num(x)}" y2="${y2}" stroke="#1f77b4"/>`,
      );
      for (const y of [y1, y2])
        out.push(`<line x1="${num(x - 4)}" y1="${y}" x2="${num(x + 4)}" y2="${y}" stroke="#1f77b4"/>`);
    }
    out.push(`<circle cx="${num(x)}" cy="${num(py(100 * b.mean))}" r="4" fill="#1f77b4"/>`);
  }
  out.push('</g>');

  // Legend below the x-axis label, one entry per row.
  const entries: string[] = [];
  const lx = MARGIN.left;
  let ly = bottom + 62;
  const entry = (swatch: (y: number) => string, text: string) => {
    entries.push(
      swatch(ly),
      `<text x="${lx + 28}" y="${ly}" dominant-baseline="middle">${escapeXml(text)}</text>`,
    );
    ly += 16;
  };
  entry(
    (y) => `<circle cx="${lx + 10}" cy="${y}" r="4" fill="#1f77b4"/>`,
    `${input.label} (mean ± std over seeds)`,
  );
  if (input.fit) {
    const { pInf, a, alpha } = input.fit;
    entry(
      (y) => `<line x1="${lx}" y1="${y}" x2="${lx + 20}" y2="${y}" stroke="#d62728" stroke-width="2"/>`,
      `fit P∞ − A·r^−α on all r: P∞ = ${num(100 * pInf)}%, A = ${num(100 * a)}%, α = ${num(alpha)}`,
    );
  }
  if (input.heldOut)
    entry(
      (y) =>
        `<line x1="${lx}" y1="${y}" x2="${lx + 20}" y2="${y}" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 4"/>`,
      `fit on r ≤ ${input.heldOut.trainMaxR}, extended to r = ${input.heldOut.targetR}`,
    );
  out.push('<g class="legend">', ...entries, '</g>');
  out.push('</svg>');
  return out.join('\n') + '\n';
}
