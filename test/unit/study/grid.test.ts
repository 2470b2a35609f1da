import { describe, expect, it } from 'vitest';
import {
  acceptedTarget,
  sftLearningRate,
  streamOf,
  studyCells,
  studyStreams,
} from '../../../activities/study/grid.js';
import {
  PROTOCOLS,
  ScalingStudySpecSchema,
  type ScalingStudySpec,
} from '../../../schemas/scaling-study-spec.js';

const endpoint = { baseUrl: 'http://127.0.0.1:1/v1', model: 'm' };

/** A validated spec: the minimum the schema needs, plus `extra`. */
function spec(extra: Record<string, unknown>): ScalingStudySpec {
  return ScalingStudySpecSchema.parse({
    kind: 'ScalingStudy',
    questions: { seedPool: 'seeds.jsonl', testSet: 'test.jsonl' },
    student: { base: { kind: 'tiny', seed: 0 }, endpoint },
    ...extra,
  });
}

const ids = (s: ScalingStudySpec) => studyCells(s).map((c) => c.cellId);

describe('studyCells', () => {
  it('with source expansion and question synthesis: every protocol budget, both RS references, every bucket, each once', () => {
    const s = spec({
      protocols: ['rs', 'question-synthesis'],
      budgets: [1, 2, 4, 8, 16],
      trainingSeeds: 2,
      rejectionSampling: { acceptedPerQuestion: 16, maxAttemptsPerQuestion: 64, attemptsPerWave: 8 },
      questionSynthesis: { perSeed: 4, budgets: [1, 2, 4], maxSimilarity: 0.7 },
      sourceExpansion: { buckets: [4, 8, 16] },
    });
    const configs = [
      // RS on the full pool at every budget (also the fixed-r k and matched-budget 4k references
      // of question synthesis, and the q = 4 allocation of every bucket).
      'rs-q4-r1',
      'rs-q4-r2',
      'rs-q4-r4',
      'rs-q4-r8',
      'rs-q4-r16',
      'question-synthesis-q4-r1',
      'question-synthesis-q4-r2',
      'question-synthesis-q4-r4',
      // Buckets B = 4, 8, 16 on Q2 (r = B/2) and Q1 (r = B).
      'rs-q2-r2',
      'rs-q2-r4',
      'rs-q2-r8',
      'rs-q1-r4',
      'rs-q1-r8',
      'rs-q1-r16',
    ];
    const expected = configs.flatMap((c) => [`${c}-s0`, `${c}-s1`]);
    const got = ids(s);
    expect(got).toHaveLength(new Set(got).size);
    expect(new Set(got)).toEqual(new Set(expected));
    expect(got).toHaveLength(28);
    // Every cell carries what its id says.
    for (const cell of studyCells(s)) {
      expect(cell.cellId).toBe(`${cell.protocol}-q${cell.pool}-r${cell.budget}-s${cell.seed}`);
    }
    // Question synthesis trains only on the full pool, at its own budgets.
    const synthesis = studyCells(s).filter((c) => c.protocol === 'question-synthesis');
    expect(synthesis.every((c) => c.pool === 4)).toBe(true);
    expect(new Set(synthesis.map((c) => c.budget))).toEqual(new Set([1, 2, 4]));
  });

  it('adds the RS references of question synthesis that the budget sweep lacks (r = k and r = 4k)', () => {
    const s = spec({
      protocols: ['question-synthesis'],
      budgets: [1, 2],
      trainingSeeds: 1,
      rejectionSampling: { acceptedPerQuestion: 8, maxAttemptsPerQuestion: 16, attemptsPerWave: 4 },
      questionSynthesis: { perSeed: 2, budgets: [1, 2], maxSimilarity: 0.7 },
    });
    expect(new Set(ids(s))).toEqual(
      new Set([
        'rs-q4-r1-s0',
        'rs-q4-r2-s0',
        'rs-q4-r4-s0', // 4·1
        'rs-q4-r8-s0', // 4·2
        'question-synthesis-q4-r1-s0',
        'question-synthesis-q4-r2-s0',
      ]),
    );
  });

  it('without source expansion or synthesis: RS plus every protocol on the full pool only', () => {
    const s = spec({
      protocols: ['judge-free', 'trace-repair'],
      budgets: [1, 4],
      trainingSeeds: 3,
      rejectionSampling: { acceptedPerQuestion: 4, maxAttemptsPerQuestion: 16, attemptsPerWave: 4 },
    });
    const got = ids(s);
    expect(got).toHaveLength(3 * 2 * 3);
    expect(studyCells(s).every((c) => c.pool === 4)).toBe(true);
    expect(got).toContain('rs-q4-r4-s2');
    expect(got).toContain('judge-free-q4-r1-s0');
    expect(got).toContain('trace-repair-q4-r4-s1');
  });
});

describe('studyStreams', () => {
  it('samples RS first and one stream per sampling configuration; derived protocols reuse RS', () => {
    const s = spec({
      protocols: [...PROTOCOLS],
      budgets: [1, 2, 4],
      teacher: { sampling: { temperature: 1.2, topP: 1, maxTokens: 64 } },
      temperatures: { low: 0.6, greedy: 0.001 },
      rejectionSampling: { acceptedPerQuestion: 16, maxAttemptsPerQuestion: 64, attemptsPerWave: 8 },
      questionSynthesis: { perSeed: 4, budgets: [1, 2, 4], maxSimilarity: 0.7 },
      personas: 'personas.jsonl',
      embeddings: endpoint,
    });
    const streams = studyStreams(s);
    expect(streams).toEqual([
      { name: 'rs', temperature: 1.2, persona: false, questions: 'seed' },
      { name: 'temperature-low', temperature: 0.6, persona: false, questions: 'seed' },
      { name: 'temperature-greedy', temperature: 0.001, persona: false, questions: 'seed' },
      { name: 'persona', temperature: 1.2, persona: true, questions: 'seed' },
      { name: 'evolved', temperature: 1.2, persona: false, questions: 'evolved' },
    ]);
    for (const p of [
      'embedding-selection',
      'judge-free',
      'judge-free-prompt-aligned',
      'trace-repair',
      'trace-repair-revised-only',
    ] as const) {
      expect(streamOf(p)).toBe('rs');
    }
    // RS collects R; other seed streams their largest budget; evolved questions the largest k.
    const target = Object.fromEntries(streams.map((st) => [st.name, acceptedTarget(st, s)]));
    expect(target).toEqual({ rs: 16, 'temperature-low': 4, 'temperature-greedy': 4, persona: 4, evolved: 4 });
  });

  it('a plain RS study samples the RS stream alone, at the teacher temperature', () => {
    const s = spec({
      protocols: ['rs'],
      teacher: { sampling: { temperature: 0.9, topP: 1, maxTokens: 64 } },
    });
    expect(studyStreams(s)).toEqual([{ name: 'rs', temperature: 0.9, persona: false, questions: 'seed' }]);
  });
});

describe('sftLearningRate', () => {
  const sft = { learningRate: 5e-6, minLearningRate: 5e-7, warmupRatio: 0.05 };

  it('warms up linearly to the peak, then decays by cosine to the minimum exactly at the last step', () => {
    const n = 100; // warm-up: ceil(0.05 · 100) = 5 steps
    const lr = Array.from({ length: n }, (_, i) => sftLearningRate(i + 1, n, sft));
    for (let k = 1; k <= 5; k++) expect(lr[k - 1]).toBeCloseTo((5e-6 * k) / 5, 18);
    expect(lr[4]).toBe(5e-6);
    expect(lr[n - 1]).toBeCloseTo(5e-7, 18);
    // Half-way through the decay the cosine is at the mid-point of peak and minimum.
    const mid = 5 + (n - 5) / 2;
    expect(sftLearningRate(mid, n, sft)).toBeCloseTo((5e-6 + 5e-7) / 2, 18);
    // Strictly increasing through warm-up, strictly decreasing after, never below the minimum.
    for (let i = 1; i < 5; i++) expect(lr[i]!).toBeGreaterThan(lr[i - 1]!);
    for (let i = 5; i < n; i++) expect(lr[i]!).toBeLessThan(lr[i - 1]!);
    expect(Math.min(...lr)).toBeGreaterThanOrEqual(5e-7 - 1e-20);
    expect(Math.max(...lr)).toBe(5e-6);
  });

  it('rounds the warm-up up to whole steps and still ends at the minimum on short runs', () => {
    // 10 steps at 5 %: one warm-up step at the peak, then nine decay steps.
    expect(sftLearningRate(1, 10, sft)).toBe(5e-6);
    expect(sftLearningRate(10, 10, sft)).toBeCloseTo(5e-7, 18);
    // Two steps: peak, then minimum.
    expect(sftLearningRate(1, 2, sft)).toBe(5e-6);
    expect(sftLearningRate(2, 2, sft)).toBeCloseTo(5e-7, 18);
    // No warm-up: cosine from the first step, minimum at the last.
    const none = { ...sft, warmupRatio: 0 };
    expect(sftLearningRate(1, 4, none)).toBeLessThan(5e-6);
    expect(sftLearningRate(1, 4, none)).toBeGreaterThan(sftLearningRate(2, 4, none));
    expect(sftLearningRate(4, 4, none)).toBeCloseTo(5e-7, 18);
  });
});
