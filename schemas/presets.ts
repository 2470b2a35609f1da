/**
 * The `paper` preset of each pipeline (issue 18): the values the seeds state, so that a spec with
 * `preset: paper` runs the papers' recipe and every other default is a visible choice (README
 * "The paper preset" compares them). A preset is a partial spec under the document: a field the
 * document sets wins, objects merge field by field, arrays and scalars are replaced whole.
 * parseSpec / parseSpecOfKind (schemas/specs.ts: the CLI, the workflows, the UI) resolve it before
 * the kind's schema fills the defaults; the parsed spec keeps `preset` and every resolved value,
 * so a stored run says what it used, and parses to itself. Parsing with a kind's schema directly
 * does not resolve a preset. Plain data: the spec schemas import this module, not the other way round.
 */
import { z } from 'zod';

/** The presets a spec may name. */
export const PresetSchema = z
  .enum(['paper'])
  .optional()
  .describe(
    "Start from the seed paper's values (docs/paper-preset.md); fields set here override it. " +
      'Resolved by parseSpec (mockworld start, the workflows).',
  );
export type Preset = z.infer<typeof PresetSchema>;

/** Seed 000 App. A (GRPO in VERL) and §3.3; values the seed does not state are left to the spec's defaults. */
const GRPO_PAPER = {
  globalBatch: 128,
  miniBatch: 16,
  rolloutsPerTask: 16,
  maxTurns: 16,
  maxResponseTokens: 13_000,
  clipLow: 0.2,
  clipHigh: 0.28,
  epochs: 2,
  // The seed scores every rollout with its rubric judge (VERL's reward manager scores a response
  // cut at the length limit as it is); its rollouts sample at VERL's default temperature 1, top-p 1.
  truncation: 'score',
  policy: { sampling: { temperature: 1, topP: 1, maxTokens: 13_000 } },
};

/** Seed 000 §3.1-3.3 and §4: four teacher demonstrations; no refinement stage in its pipeline. */
const SYNTHESIS_PAPER = {
  demonstrationsPerTask: 4,
  refine: { removeSelfSolvable: false, makeSimulable: false, distractors: 0 },
};

/** Seed 002 Sec. 4-7 and App. 11.3-11.4. */
const STUDY_PAPER = {
  teacher: { sampling: { temperature: 1.2, topP: 1, maxTokens: 8192 } },
  judge: { sampling: { temperature: 0 } },
  // The seed's LLM judge grades every answer ("an LLM judge accepts traces whose final answer matches").
  exactMatch: false,
  // "until 32 correct ones are collected": no per-question attempt cap.
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
  // mean@8 at temperature 0.7; the seed states no generation cap: its SFT sequence length.
  evaluation: { samples: 8, sampling: { temperature: 0.7, topP: 1, maxTokens: 4096 } },
};

/** The `paper` preset of each pipeline kind that has one. */
export const PAPER_PRESETS = {
  GrpoTraining: GRPO_PAPER,
  Synthesis: SYNTHESIS_PAPER,
  ScalingStudy: STUDY_PAPER,
} as const;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `under` with `over` on top: objects merge recursively, anything else in `over` replaces. */
function merge(under: Json, over: Json): Json {
  const out: Json = { ...under };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isObject(value) && isObject(under[key]) ? merge(under[key] as Json, value) : value;
  }
  return out;
}

/**
 * The document with its preset's values under it; unchanged when it names no preset it knows
 * (an unknown name is then refused by {@link PresetSchema}, with its path).
 */
export function applyPreset(presets: Partial<Record<NonNullable<Preset>, Json>>, document: unknown): unknown {
  if (!isObject(document) || typeof document['preset'] !== 'string') return document;
  const name = document['preset'];
  const preset = Object.hasOwn(presets, name) ? presets[name as NonNullable<Preset>] : undefined;
  return preset ? merge(preset, document) : document;
}
