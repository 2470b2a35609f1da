import { describe, expect, it } from 'vitest';
import { renderRewardSvg } from '../../../activities/training/reward-plot.js';

const iteration = (i: number, metrics: Record<string, unknown>) => ({
  iteration: i,
  policyVersion: `step-${i + 1}`,
  metrics,
});

/** The marks vega drew for one kind of symbol (`point`, `square`, `rule mark`, `line mark`). */
const marks = (svg: string, kind: string) =>
  [...svg.matchAll(new RegExp(`<(?:path|line) [^>]*aria-roledescription="${kind}"[^>]*>`, 'g'))].map(
    (m) => m[0],
  );

describe('the GRPO reward curve', async () => {
  const svg = await renderRewardSvg('grpo-<run>&1', [
    iteration(0, { rewardMean: 0.25, rewardStd: 0.1 }),
    iteration(1, { rewardMean: 0.5, rewardStd: 0, evaluation: { rewardMean: 0.4 } }),
    iteration(2, { rewardMean: null, rewardStd: null }), // nothing judged: no point
    iteration(3, { rewardMean: 0.75, rewardStd: 0.2, evaluation: { rewardMean: null } }),
  ]);

  it('is one standalone SVG document (vega, rendered on the server) with the run id escaped', () => {
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[\s\S]*<\/svg>\n$/);
    expect(svg).toContain('grpo-&lt;run&gt;&amp;1');
    expect(svg).not.toContain('grpo-<run>');
    expect(svg).toContain('rubric reward');
  });

  it('draws a point per judged iteration, error bars where the std is above 0, and evaluations apart', () => {
    const points = marks(svg, 'point');
    expect(points).toHaveLength(3);
    expect(points.map((p) => /rubric reward: ([\d.]+)/.exec(p)![1])).toEqual(['0.25', '0.5', '0.75']);
    const bars = marks(svg, 'rule mark').filter((b) => !/ y2="0"/.test(b));
    expect(bars).toHaveLength(2);
    expect(marks(svg, 'square')).toHaveLength(1);
    // Iteration 2 judged nothing: the line stops there instead of bridging it.
    const [line] = marks(svg, 'line mark');
    const d = / d="([^"]*)"/.exec(line!)![1]!;
    expect(d.match(/M/g)).toHaveLength(2);
    const ys = [...d.matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) => Number(m[1]));
    expect(ys[0]).toBeGreaterThan(ys[1]!); // higher reward is drawn higher up (smaller y)
  });
});
