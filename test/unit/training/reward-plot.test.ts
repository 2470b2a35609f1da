import { describe, expect, it } from 'vitest';
import { renderRewardSvg } from '../../../activities/training/reward-plot.js';

const iteration = (i: number, metrics: Record<string, unknown>) => ({
  iteration: i,
  policyVersion: `step-${i + 1}`,
  metrics,
});

describe('the GRPO reward curve', () => {
  const svg = renderRewardSvg('grpo-<run>&1', [
    iteration(0, { rewardMean: 0.25, rewardStd: 0.1 }),
    iteration(1, { rewardMean: 0.5, rewardStd: 0, evaluation: { rewardMean: 0.4 } }),
    iteration(2, { rewardMean: null, rewardStd: null }), // nothing judged: no point
    iteration(3, { rewardMean: 0.75, rewardStd: 0.2, evaluation: { rewardMean: null } }),
  ]);
  const group = (name: string) => new RegExp(`<g class="${name}">([\\s\\S]*?)</g>`).exec(svg)![1]!;

  it('is one standalone SVG document with the run id escaped', () => {
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[\s\S]*<\/svg>\n$/);
    expect(svg).toContain('grpo-&lt;run&gt;&amp;1');
    expect(svg).not.toContain('grpo-<run>');
  });

  it('draws a point per judged iteration, error bars where the std is above 0, and evaluations apart', () => {
    expect(group('rollouts').match(/<circle/g)).toHaveLength(3);
    expect(group('rollouts').match(/class="error-bar"/g)).toHaveLength(2);
    expect(group('evaluations').match(/<rect/g)).toHaveLength(1);
    // Iteration 2 judged nothing: the line stops there instead of bridging it.
    const lines = [...svg.matchAll(/class="rollout-mean"[^>]*points="([^"]*)"/g)].map((m) => m[1]!);
    expect(lines).toHaveLength(1);
    const ys = lines[0]!.split(' ').map((p) => Number(p.split(',')[1]));
    expect(ys).toHaveLength(2);
    expect(ys[0]).toBeGreaterThan(ys[1]!); // higher reward is drawn higher up (smaller y)
  });
});
