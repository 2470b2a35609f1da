import { describe, expect, it } from 'vitest';
import { renderRewardSvg } from '../../../activities/training/reward-plot.js';
import { renderBenchmarkSteps } from '../../../cli/training-view.js';
import type { EvaluationMetrics } from '../../../schemas/evaluation-contract.js';
import { EvaluationSpecSchema } from '../../../schemas/evaluation-spec.js';
import { GrpoSpecSchema } from '../../../schemas/grpo-spec.js';
import {
  benchmarkEvaluationSpec,
  benchmarksDue,
  benchmarkScores,
} from '../../../workflows/grpo-benchmarks.js';

/** A GrpoTraining spec with `benchmarks`. */
function spec(benchmarks: unknown) {
  return {
    kind: 'GrpoTraining',
    dataset: { synthesisRunId: 'syn' },
    policy: { base: { kind: 'tiny' }, endpoint: { baseUrl: 'http://gpu-1:8000/v1', model: 'p' } },
    benchmarks,
  };
}

const issues = (input: unknown) =>
  (GrpoSpecSchema.safeParse(input).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);

const server = { baseUrl: 'http://gpu-1:8001/v1' };

describe('benchmarks in a GrpoTraining spec', () => {
  it('names every bad field of the section at once', () => {
    const found = issues(
      spec({
        every: 0,
        bfcl: { categories: ['multi_turn_nope'], trials: 0 },
        tau2: { domains: ['airline'] }, // no userSimulator
        policy: { endpoint: server }, // the policy is the run's own step
        concurrency: 0,
      }),
    );
    const paths = found.map((f) => f.split(':')[0]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'benchmarks.every',
        'benchmarks.server',
        'benchmarks.bfcl.categories.0',
        'benchmarks.bfcl.trials',
        'benchmarks.tau2.userSimulator',
        'benchmarks.concurrency',
        'benchmarks',
      ]),
    );
    expect(found.find((f) => f.startsWith('benchmarks:'))).toMatch(/policy/); // unrecognized key
    expect(issues(spec({ every: 1, server }))).toEqual([
      'benchmarks: name at least one benchmark (tau2, bfcl, math, search or synthetic)',
    ]);
  });

  it("builds the child Evaluation spec of a step: the Evaluation's own schema takes it unchanged", () => {
    const parsed = GrpoSpecSchema.parse(
      spec({ every: 2, server, bfcl: { categories: ['multi_turn_base'], limit: 1 }, concurrency: 3 }),
    );
    const child = benchmarkEvaluationSpec(parsed.benchmarks!, 'run-1', 4);
    expect(EvaluationSpecSchema.parse(child)).toEqual(child);
    expect(child).toMatchObject({
      kind: 'Evaluation',
      name: 'evaluation step-4',
      policy: { checkpoint: { runId: 'run-1', step: 4, server } },
      benchmarks: { bfcl: { categories: ['multi_turn_base'], limit: 1, trials: 1 } },
      concurrency: 3,
      evalTaskQueue: 'mockworld-eval',
    });
    expect(child.benchmarks.tau2).toBeUndefined();
  });

  it('is due every `every` iterations, at the last, and at the iteration a stop ends the run on', () => {
    const section = GrpoSpecSchema.parse(spec({ every: 3, server, bfcl: {} })).benchmarks!;
    const due = (iteration: number, stopping = false) => benchmarksDue(section, iteration, 7, stopping);
    expect([0, 1, 2, 3, 4, 5, 6].filter((i) => due(i))).toEqual([2, 5, 6]);
    expect(due(0, true)).toBe(true);
    expect(benchmarksDue(undefined, 2, 7, true)).toBe(false);
  });

  it('condenses the child metrics per benchmark and group, and the report prints them per step', () => {
    const group = (benchmark: 'bfcl' | 'tau2', name: string, avg: number, k: number) => ({
      benchmark,
      group: name,
      tasks: 5,
      trials: 5 * k,
      k,
      equalTrials: true,
      avgAtK: avg,
      avgAtKCi: [avg - 0.1, avg + 0.1] as [number, number],
      passHatK: Object.fromEntries(Array.from({ length: k }, (_, i) => [String(i + 1), avg / (i + 1)])),
      passHatKCi: {},
      terminations: {},
      modelErrors: 0,
      promptTokens: 1,
      completionTokens: 1,
      configHashes: 1,
    });
    const metrics: EvaluationMetrics = {
      evaluationId: 'r-eval-step-2',
      confidence: 0.95,
      bootstrapSamples: 100,
      trials: 15,
      groups: [group('bfcl', 'multi_turn_base', 0.4, 1), group('tau2', 'retail', 0.5, 2)],
      bfclOverall: {
        categories: [
          'multi_turn_base',
          'multi_turn_miss_func',
          'multi_turn_miss_param',
          'multi_turn_long_context',
        ],
        complete: true,
        missing: [],
        accuracy: 0.4,
        ci: [0.3, 0.5],
      },
      comparison: null,
    };
    // A missing category leaves no overall at all, never the mean of the others.
    const incomplete = benchmarkScores('r-eval-step-2', {
      ...metrics,
      bfclOverall: {
        categories: ['multi_turn_base'],
        complete: false,
        missing: ['x'],
        accuracy: null,
        ci: null,
      },
    });
    expect(incomplete['bfcl']).not.toHaveProperty('overall');
    const scores = benchmarkScores('r-eval-step-2', metrics);
    expect(scores).toEqual({
      evaluationId: 'r-eval-step-2',
      bfcl: {
        multi_turn_base: {
          avg: 0.4,
          avgCi: [0.30000000000000004, 0.5],
          passHat: { '1': 0.4 },
          tasks: 5,
          k: 1,
          modelErrors: 0,
        },
        overall: 0.4,
      },
      tau2: {
        retail: {
          avg: 0.5,
          avgCi: [0.4, 0.6],
          passHat: { '1': 0.5, '2': 0.25 },
          tasks: 5,
          k: 2,
          modelErrors: 0,
        },
      },
    });
    const text = renderBenchmarkSteps([
      { iteration: 0, policyVersion: 'step-1', metrics: { rewardMean: 0.1 } },
      { iteration: 1, policyVersion: 'step-2', metrics: { benchmarks: scores } },
      {
        iteration: 2,
        policyVersion: 'step-3',
        metrics: { benchmarks: { evaluationId: 'r-eval-step-3', failure: 'X: down' } },
      },
    ]);
    const lines = text.split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual([
      'iteration',
      'step',
      'bfcl multi_turn_base Avg@k',
      'bfcl multi_turn_base pass^k',
      'bfcl overall',
      'tau2 retail Avg@k',
      'tau2 retail pass^k',
      'evaluation run',
      'failed',
    ]);
    expect(lines[2]!.trim().split(/\s+/)).toEqual([
      '1',
      'step-2',
      '0.400',
      '0.400',
      '0.400',
      '0.500',
      '0.250',
      'r-eval-step-2',
    ]);
    expect(lines[3]).toMatch(/^2\s+step-3\s+r-eval-step-3\s+X: down$/);
    expect(lines).toHaveLength(4);
    expect(renderBenchmarkSteps([{ iteration: 0, policyVersion: 'step-1', metrics: {} }])).toBe('');
  });

  it('draws each benchmark group as a dashed Avg@k curve next to the reward curve', async () => {
    const scores = (avg: number) => ({
      evaluationId: 'x',
      bfcl: { multi_turn_base: { avg, k: 1 }, overall: avg },
      tau2: { retail: { avg: avg / 2, k: 2 } },
    });
    const svg = await renderRewardSvg('r', [
      {
        iteration: 0,
        policyVersion: 'step-1',
        metrics: { rewardMean: 0.2, rewardStd: 0, benchmarks: scores(0.4) },
      },
      { iteration: 1, policyVersion: 'step-2', metrics: { rewardMean: 0.3, rewardStd: 0 } },
      {
        iteration: 2,
        policyVersion: 'step-3',
        metrics: { rewardMean: 0.4, rewardStd: 0, benchmarks: scores(0.6) },
      },
    ]);
    const points = [...svg.matchAll(/<path [^>]*aria-roledescription="point"[^>]*>/g)].map((m) => m[0]);
    const benchmarkPoints = points
      .map((p) => /aria-label="iteration: (\d); rubric reward: ([\d.]+); series: (\w+ \w+): Avg@k/.exec(p))
      .filter((m) => m !== null)
      .map((m) => `${m[3]} ${m[1]} ${m[2]}`);
    expect(benchmarkPoints.sort()).toEqual([
      'bfcl multi_turn_base 0 0.4',
      'bfcl multi_turn_base 2 0.6',
      'tau2 retail 0 0.2',
      'tau2 retail 2 0.3',
    ]);
    expect(points).toHaveLength(3 + 4); // the rollouts' points are still there
    expect(svg.match(/stroke-dasharray="4,2"/g)).toHaveLength(2);
    expect(svg).toContain('bfcl multi_turn_base: Avg@k (policy after the step)'); // in the legend
  });
});
