/**
 * The reward curve of a GRPO run as a standalone SVG: x = iteration, y = rubric reward on its
 * whole range [0, 1]; the rollouts' mean reward with ± one std error bars, and the held-out
 * evaluation's mean reward where one ran. Plain strings, no library.
 */
import { escapeXml } from '../study/analysis/plot.js';
import type { IterationMetrics } from './metrics.js';

const WIDTH = 640;
const HEIGHT = 400;
const MARGIN = { left: 64, right: 24, top: 44, bottom: 92 } as const;
const ROLLOUT_COLOUR = '#1f77b4';
const EVALUATION_COLOUR = '#d62728';

const num = (v: number): string => (Math.round(v * 100) / 100).toString();
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Renders the reward per iteration of `runId`; iterations without a judged rollout are skipped. */
export function renderRewardSvg(runId: string, iterations: readonly IterationMetrics[]): string {
  const points = iterations.flatMap(({ iteration, metrics }) =>
    finite(metrics.rewardMean)
      ? [{ iteration, mean: metrics.rewardMean, std: finite(metrics.rewardStd) ? metrics.rewardStd : 0 }]
      : [],
  );
  const evaluations = iterations.flatMap(({ iteration, metrics }) => {
    const mean = (metrics.evaluation as { rewardMean?: unknown } | undefined)?.rewardMean;
    return finite(mean) ? [{ iteration, mean }] : [];
  });
  const last = Math.max(1, ...iterations.map((i) => i.iteration));
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const px = (iteration: number) => MARGIN.left + ((iteration + 0.5) / (last + 1)) * plotW;
  const py = (reward: number) => MARGIN.top + (1 - Math.min(1, Math.max(0, reward))) * plotH;
  const bottom = MARGIN.top + plotH;
  const right = MARGIN.left + plotW;
  const title = `GRPO reward per iteration: ${runId}`;

  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12" role="img" aria-label="${escapeXml(title)}">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ];
  for (let tick = 0; tick <= 10; tick += 2) {
    const y = num(py(tick / 10));
    out.push(
      `<line x1="${MARGIN.left}" y1="${y}" x2="${right}" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${tick / 10}</text>`,
    );
  }
  const every = Math.max(1, Math.ceil((last + 1) / 20)); // at most ~20 labelled iterations
  for (let iteration = 0; iteration <= last; iteration += every) {
    const x = num(px(iteration));
    out.push(
      `<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 5}" stroke="#333333"/>`,
      `<text x="${x}" y="${bottom + 18}" text-anchor="middle">${iteration}</text>`,
    );
  }
  out.push(
    `<line x1="${MARGIN.left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#333333"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${bottom}" stroke="#333333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${bottom + 38}" text-anchor="middle">iteration</text>`,
    `<text x="18" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 18 ${MARGIN.top + plotH / 2})">rubric reward</text>`,
  );

  // One line per run of consecutive iterations: an iteration without a judged rollout is a gap.
  const runs: (typeof points)[] = [];
  for (const p of points) {
    const run = runs.at(-1);
    if (run && run.at(-1)!.iteration === p.iteration - 1) run.push(p);
    else runs.push([p]);
  }
  for (const run of runs.filter((r) => r.length > 1))
    out.push(
      `<polyline class="rollout-mean" fill="none" stroke="${ROLLOUT_COLOUR}" stroke-width="2" points="${run.map((p) => `${num(px(p.iteration))},${num(py(p.mean))}`).join(' ')}"/>`,
    );
  out.push('<g class="rollouts">');
  for (const p of points) {
    const x = num(px(p.iteration));
    if (p.std > 0)
      out.push(
        `<line class="error-bar" x1="${x}" y1="${num(py(p.mean - p.std))}" x2="${x}" y2="${num(py(p.mean + p.std))}" stroke="${ROLLOUT_COLOUR}"/>`,
      );
    out.push(`<circle cx="${x}" cy="${num(py(p.mean))}" r="3.5" fill="${ROLLOUT_COLOUR}"/>`);
  }
  out.push('</g>', '<g class="evaluations">');
  for (const e of evaluations) {
    const [x, y] = [px(e.iteration), py(e.mean)];
    out.push(`<rect x="${num(x - 4)}" y="${num(y - 4)}" width="8" height="8" fill="${EVALUATION_COLOUR}"/>`);
  }
  out.push('</g>');

  const ly = bottom + 62;
  out.push(
    '<g class="legend">',
    `<circle cx="${MARGIN.left + 10}" cy="${ly}" r="3.5" fill="${ROLLOUT_COLOUR}"/>`,
    `<text x="${MARGIN.left + 24}" y="${ly}" dominant-baseline="middle">rollouts: mean ± std (policy before the step)</text>`,
    `<rect x="${MARGIN.left + 316}" y="${ly - 4}" width="8" height="8" fill="${EVALUATION_COLOUR}"/>`,
    `<text x="${MARGIN.left + 330}" y="${ly}" dominant-baseline="middle">held-out: mean (policy after it)</text>`,
    '</g>',
    '</svg>',
  );
  return out.join('\n') + '\n';
}
