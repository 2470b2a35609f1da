import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { renderChartSvg } from '../../../activities/charts/render.js';
import {
  fitScalingLaw,
  heldOutForecast,
  predictScalingLaw,
  renderStudyReport,
} from '../../../activities/study/analysis/index.js';
import type { StudyReportInput } from '../../../schemas/study-report.js';

const GRID = [1, 2, 4, 8, 16, 32];
const OFFSETS = [-0.01, 0, 0.01]; // three training seeds: sample std 1 pp at every budget

const sweep = (params: { pInf: number; a: number; alpha: number }) =>
  GRID.flatMap((r) => OFFSETS.map((o, seed) => ({ r, seed, score: predictScalingLaw(params, r) + o })));

const RS = { pInf: 0.62, a: 0.25, alpha: 0.5 };
const PERSONA = { pInf: 0.61, a: 0.25, alpha: 0.5 };

const input: StudyReportInput = {
  title: 'Physics | T_DS → S_Q7',
  curves: [
    {
      protocol: 'rs',
      label: 'RS',
      samples: sweep(RS),
      intrinsic: { jaccardDistance: 0.48, correctnessNoise: 0.033 },
    },
    {
      protocol: 'persona',
      label: 'Persona <PersonaHub> & co',
      samples: sweep(PERSONA),
      intrinsic: { jaccardDistance: 0.55, correctnessNoise: 0.031, rewriteShare: 0, poolR: 32 },
    },
    {
      protocol: 'short',
      samples: [
        { r: 1, seed: 0, score: 0.3 },
        { r: 2, seed: 0, score: 0.35 },
      ],
    },
  ],
  matchedBudget: [
    { q: 4, r: 1, seed: 0, score: 0.5 },
    { q: 4, r: 1, seed: 1, score: 0.52 },
    { q: 2, r: 2, seed: 0, score: 0.49 },
    { q: 1, r: 4, seed: 0, score: 0.47 },
  ],
};

/** A minimal XML well-formedness check: balanced, properly nested tags; no raw `<` or `&` in text. */
function checkWellFormed(xml: string): string[] {
  const stack: string[] = [];
  const tagNames: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(xml); m; m = tag.exec(xml)) {
    const text = xml.slice(last, m.index);
    if (/[<>]/.test(text) || /&(?!(amp|lt|gt|quot|apos);)/.test(text)) throw new Error(`bad text: ${text}`);
    last = tag.lastIndex;
    const [, closing, name, , selfClosing] = m;
    tagNames.push(name!);
    if (closing) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
    } else if (!selfClosing) stack.push(name!);
  }
  if (xml.slice(last).trim()) throw new Error(`trailing text: ${xml.slice(last)}`);
  if (stack.length) throw new Error(`unclosed: ${stack.join(', ')}`);
  return tagNames;
}

/** The marks vega drew for one kind of symbol (`point`, `line mark`). */
const marks = (svg: string, kind: string) =>
  [...svg.matchAll(new RegExp(`<(?:path|line) [^>]*aria-roledescription="${kind}"[^>]*>`, 'g'))].map(
    (m) => m[0],
  );
/** The vertices of a line mark's path, in SVG coordinates. */
const vertices = (mark: string) =>
  [.../ d="([^"]*)"/.exec(mark)![1]!.matchAll(/[ML]([\d.]+),([\d.]+)/g)].map(
    (m) => [Number(m[1]), Number(m[2])] as const,
  );
/** The line marks that draw a fitted curve: the fit (solid) or the held-out fit (dashed). */
const fitLines = (svg: string) => marks(svg, 'line mark').filter((m) => vertices(m).length > 50);

describe('study report', async () => {
  const report = renderStudyReport(input);
  const svgs = await Promise.all(report.figures.map((f) => renderChartSvg(f.spec)));
  const lines = report.markdown.split('\n');

  it('renders the score table: mean ± std over seeds per r, one row per protocol', () => {
    expect(lines).toContain('| protocol | r=1 | r=2 | r=4 | r=8 | r=16 | r=32 |');
    // RS at r = 1: 0.62 − 0.25 = 37.00 %, std of (−1, 0, +1) pp = 1.00.
    const rsRow = lines.find((l) => l.startsWith('| RS |'))!;
    expect(rsRow).toContain('| 37.00 ± 1.00 |');
    expect(rsRow.split('|').filter((c) => c.includes('±'))).toHaveLength(6);
    expect(lines).toContain('| short | 30.00 (n=1) | 35.00 (n=1) | — | — | — | — |');
  });

  it('renders the fit, its in-sample MAE, and why a short curve has none', () => {
    const fit = fitScalingLaw(sweep(RS));
    expect(lines).toContain(
      `| RS | ${(100 * fit.params.pInf).toFixed(2)} | ${(100 * fit.params.a).toFixed(2)} | ${fit.params.alpha.toFixed(3)} | none | ${fit.maePp.toFixed(2)} |`,
    );
    expect(fit.params.pInf).toBeCloseTo(0.62, 6);
    expect(lines.find((l) => l.startsWith('| short |') && l.includes('at least 3 distinct r'))).toBeDefined();
  });

  it('renders the Fit, Carry and LogLin forecasts of r = 32 and their pooled MAE', () => {
    const f = heldOutForecast(sweep(RS));
    const row = lines.find((l) => l.startsWith('| RS | 57.58 |'));
    expect(row).toBe(
      `| RS | 57.58 | ${(100 * f.fit.prediction).toFixed(2)} | ${f.fit.absErrorPp.toFixed(2)} | ` +
        `${(100 * f.carry.prediction).toFixed(2)} | ${f.carry.absErrorPp.toFixed(2)} | ` +
        `${(100 * f.logLin.prediction).toFixed(2)} | ${f.logLin.absErrorPp.toFixed(2)} |`,
    );
    // Carry: the r = 16 mean, 0.62 − 0.25/4 = 55.75 % against 0.62 − 0.25/√32 = 57.58 %.
    expect(f.carry.prediction).toBeCloseTo(0.5575, 12);
    expect(lines.find((l) => l.startsWith('| pooled MAE (2 curves) |'))).toBeDefined();
  });

  it('renders intrinsic metrics, the sweep-mean gap to RS and the aggregate gap', () => {
    // Persona is 1 pp below RS at every budget; markdown pipes in labels are escaped.
    expect(lines).toContain(
      '| Persona <PersonaHub> & co | 0.550 | 3.1 | 0.0 | 32 | -1.00 | 1, 2, 4, 8, 16, 32 |',
    );
    expect(lines).toContain('| RS | 0.480 | 3.3 | — | — | reference | — |');
    // `short` (r = 1, 2; one seed): 30 − 37 = −7 and 35 − 44.32 = −9.32 pp; with Persona's six
    // points of −1 pp: (−6 − 7 − 9.32) / 8 = −2.79 pp.
    expect(lines).toContain('| short | — | — | — | — | -8.16 | 1, 2 |');
    const shortAt2 = 35 - 100 * predictScalingLaw(RS, 2);
    expect(((-6 - 7 + shortAt2) / 8).toFixed(2)).toBe('-2.79');
    expect(report.markdown).toContain('Aggregate gap over all 8 method–budget points: -2.79 pp.');
    expect(lines[0]).toBe('# Physics | T_DS → S_Q7');
  });

  it('renders the matched-budget buckets with their cells', () => {
    expect(lines).toContain('| B = q·r | Q4 (q=4) | Q2 (q=2) | Q1 (q=1) | best |');
    expect(lines).toContain('| 4 | 51.00 ± 1.41 (r=1) | 49.00 (n=1) (r=2) | 47.00 (n=1) (r=4) | q=4 |');
    expect(lines).toContain('| 32 | — (r=8) | — (r=16) | — (r=32) | — |');
  });

  it('renders one well-formed SVG per curve with points, error bars, the fitted curve and labels', () => {
    expect(report.figures.map((f) => f.fileName)).toEqual([
      'curve-rs.svg',
      'curve-persona.svg',
      'curve-short.svg',
    ]);
    const svg = svgs[0]!;
    const tags = checkWellFormed(svg);
    expect(tags[0]).toBe('svg');
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    const points = marks(svg, 'point');
    expect(points).toHaveLength(GRID.length);
    expect(marks(svg, 'rule mark').filter((b) => !/ y2="0"/.test(b))).toHaveLength(GRID.length);
    expect(svg).toContain('responses per question r (log2 scale)');
    expect(svg).toContain('score (mean@8, %)');
    for (const r of GRID) expect(svg).toContain(`>${r}</text>`);

    // The fitted curve rises with r: x increases and y (SVG, downwards) decreases along it.
    const [fit, heldOut] = fitLines(svg);
    const along = vertices(fit!);
    expect(along.every(([x, y]) => Number.isFinite(x) && Number.isFinite(y))).toBe(true);
    for (let i = 1; i < along.length; i++) {
      expect(along[i]![0]).toBeGreaterThan(along[i - 1]![0]);
      expect(along[i]![1]).toBeLessThanOrEqual(along[i - 1]![1]);
    }
    // Points on the log2 axis: equal spacing between successive doublings.
    const cx = points.map((p) => Number(/translate\(([\d.]+),/.exec(p)![1]));
    const gaps = cx.slice(1).map((x, i) => x - cx[i]!);
    for (const g of gaps) expect(g).toBeCloseTo(gaps[0]!, 1);
    expect(heldOut).toMatch(/stroke-dasharray="6,4"/);
  });

  it('escapes labels in the SVG and omits the fit of a curve too short to fit', () => {
    const persona = svgs[1]!;
    checkWellFormed(persona);
    expect(persona).toContain('Persona &lt;PersonaHub&gt; &amp; co');
    const short = svgs[2]!;
    checkWellFormed(short);
    expect(fitLines(short)).toEqual([]);
    expect(marks(short, 'point')).toHaveLength(2); // r = 1 and 2
  });

  it('the well-formedness check itself rejects broken SVG', () => {
    const svg = svgs[2]!;
    expect(() => checkWellFormed(svg.replace('</g>', ''))).toThrow();
    expect(() => checkWellFormed(svg.replace('responses per question', 'a < b'))).toThrow();
  });

  it('validates its input and names the bad path', () => {
    const bad = { ...input, curves: [{ protocol: 'rs', samples: [{ r: 1, seed: 0, score: 1.5 }] }] };
    expect(() => renderStudyReport(bad)).toThrow(ZodError);
    try {
      renderStudyReport(bad);
    } catch (error) {
      expect((error as ZodError).issues[0]!.path).toEqual(['curves', 0, 'samples', 0, 'score']);
    }
    expect(() =>
      renderStudyReport({ ...input, matchedBudget: [{ q: 4, r: 16, seed: 0, score: 0.5 }] }),
    ).toThrow(ZodError);
    expect(() => renderStudyReport({ ...input, curves: [input.curves[0]!, input.curves[0]!] })).toThrow(
      /duplicate/,
    );
  });
});
