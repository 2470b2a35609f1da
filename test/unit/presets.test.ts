/**
 * The `paper` preset of each pipeline (issue 18): `preset: paper` resolves to the seeds' values,
 * explicit fields still override, and the parsed spec (what a run stores) holds every resolved
 * value and parses to itself.
 */
import { describe, expect, it } from 'vitest';
import { PAPER_PRESETS } from '../../schemas/presets.js';
import { parseSpec } from '../../schemas/specs.js';
import { SpecValidationError } from '../../schemas/spec-error.js';

const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'policy' };
const GRPO = {
  kind: 'GrpoTraining',
  dataset: { synthesisRunId: 'syn-1' },
  policy: { base: { kind: 'tiny' }, endpoint },
};
const STUDY = {
  kind: 'ScalingStudy',
  questions: { seedPool: 'seeds.jsonl', testSet: 'test.jsonl' },
  student: { base: { kind: 'tiny' }, endpoint },
};
const SYNTHESIS = { kind: 'Synthesis', personas: { path: 'personas.jsonl' }, tasks: 10 };

describe('the paper preset', () => {
  it('GrpoTraining: seed 000 App. A', () => {
    const spec = parseSpec({ ...GRPO, preset: 'paper' });
    expect(spec).toMatchObject({
      preset: 'paper',
      globalBatch: 128,
      miniBatch: 16,
      rolloutsPerTask: 16,
      maxTurns: 16,
      maxResponseTokens: 13_000,
      clipLow: 0.2,
      clipHigh: 0.28,
      epochs: 2,
      truncation: 'score',
      policy: { sampling: { temperature: 1, topP: 1, maxTokens: 13_000 } },
    });
  });

  it('ScalingStudy: seed 002', () => {
    const spec = parseSpec({ ...STUDY, preset: 'paper' });
    expect(spec).toMatchObject({
      preset: 'paper',
      teacher: { sampling: { temperature: 1.2, maxTokens: 8192 } },
      judge: { sampling: { temperature: 0 } },
      exactMatch: false,
      rejectionSampling: { acceptedPerQuestion: 32, maxAttemptsPerQuestion: null },
      budgets: [1, 2, 4, 8, 16, 32],
      trainingSeeds: 3,
      temperatures: { low: 0.6, greedy: 0.001 },
      questionSynthesis: { budgets: [1, 2, 4, 8] },
      sft: {
        epochs: 8,
        learningRate: 5e-6,
        minLearningRate: 5e-7,
        weightDecay: 0.1,
        globalBatch: 32,
        maxSeqLen: 4096,
      },
      evaluation: { samples: 8, sampling: { temperature: 0.7, maxTokens: 4096 } },
    });
    // mockworld's own defaults differ where the README says why.
    expect(parseSpec(STUDY)).toMatchObject({
      exactMatch: true,
      rejectionSampling: { maxAttemptsPerQuestion: 128 },
    });
  });

  it('Synthesis: seed 000 where it states them (4 demonstrations, no refine stage)', () => {
    const spec = parseSpec({ ...SYNTHESIS, preset: 'paper' });
    expect(spec).toMatchObject({
      preset: 'paper',
      demonstrationsPerTask: 4,
      refine: { removeSelfSolvable: false, makeSimulable: false, distractors: 0 },
    });
    expect(parseSpec(SYNTHESIS)).toMatchObject({ refine: { distractors: 1 } });
  });

  it('lets explicit fields override the preset, field by field', () => {
    const spec = parseSpec({
      ...GRPO,
      preset: 'paper',
      globalBatch: 4,
      miniBatch: 2,
      policy: { ...GRPO.policy, sampling: { temperature: 0.8 } },
    });
    expect(spec).toMatchObject({
      globalBatch: 4,
      miniBatch: 2,
      rolloutsPerTask: 16,
      policy: { sampling: { temperature: 0.8, topP: 1, maxTokens: 13_000 } },
    });
    const study = parseSpec({
      ...STUDY,
      preset: 'paper',
      rejectionSampling: { maxAttemptsPerQuestion: 500 },
    });
    expect(study).toMatchObject({
      rejectionSampling: { acceptedPerQuestion: 32, maxAttemptsPerQuestion: 500 },
    });
  });

  it('stores every resolved value: the parsed spec parses to itself', () => {
    for (const document of [GRPO, STUDY, SYNTHESIS]) {
      const parsed = parseSpec({ ...document, preset: 'paper' });
      expect(parseSpec(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
      // Every field the preset sets is in the parsed spec, with the preset's value or an override.
      const preset = PAPER_PRESETS[document.kind as keyof typeof PAPER_PRESETS] as Record<string, unknown>;
      for (const key of Object.keys(preset)) expect(parsed).toHaveProperty(key);
    }
  });

  it('names an unknown preset', () => {
    expect(() => parseSpec({ ...GRPO, preset: 'papr' })).toThrow(SpecValidationError);
    expect(() => parseSpec({ ...GRPO, preset: 'papr' })).toThrow(/preset/);
  });
});
