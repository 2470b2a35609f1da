import { z } from 'zod';
import { judgeControlsSchema } from './judge-controls.js';
import {
  ModelEndpointSchema,
  ModelRoleSchema,
  PolicySamplingSchema,
  RunBudgetSchema,
} from './model-endpoint.js';
import { PolicyServingSchema } from './policy-serving.js';
import { PresetSchema } from './presets.js';
import { SandboxCapsSchema } from './reasoning-sandbox.js';
import { SearchBackendSchema } from './reasoning-search.js';
import { DEFAULT_WORLD, TurnToolChoicesSchema, WorldSchema } from './synthesis-spec.js';
import { TemplatesSchema } from './templates.js';
import {
  GgufModelSpecSchema,
  PretrainedModelSpecSchema,
  TinyModelFieldsSchema,
  TrainerDtypeSchema,
} from './trainer-model.js';
import { TRAINER_STEP_DEFAULTS, TrainerStepFields } from './trainer-step.js';
import { TrainingBenchmarksSchema } from './training-benchmarks.js';
import { runNameField } from './run-name.js';

/**
 * The policy's starting weights: a tiny random model (tests, CPU), a local pretrained model, or a
 * GGUF file (the embedded model's weights: trainable on a laptop without a download).
 * Built from the trainer's model spec (schemas/trainer-model.ts), so a kind or dtype the trainer
 * would refuse at its first step is refused when the run starts; a spec sets only a tiny model's
 * seed (and LoRA), and a pretrained model defaults to bfloat16 here. With `lora` the run trains
 * adapters (schemas/trainer-model.ts TrainerLoraSchema).
 */
export const PolicyBaseSchema = z.discriminatedUnion('kind', [
  TinyModelFieldsSchema.pick({ kind: true, seed: true, lora: true }),
  PretrainedModelSpecSchema.extend({ dtype: TrainerDtypeSchema.default('bfloat16') }),
  GgufModelSpecSchema,
]);

/**
 * What a rollout cut at a cap (turns, response tokens, transcript bytes) is trained as: `score`
 * keeps it with the reward its judge gives it (the judge is told it was cut, so it credits only
 * what the transcript shows), `drop` leaves it out of the batch (and of its group's advantage).
 */
export const TruncationRuleSchema = z.enum(['score', 'drop']);
export type TruncationRule = z.infer<typeof TruncationRuleSchema>;

/**
 * The reasoning problems of a GRPO mix: the kept problems of a Synthesis run with a `reasoning`
 * section (reasoning_problems), the tools they are rolled out with, and how many of them.
 */
export const ReasoningMixSchema = z
  .object({
    synthesisRunId: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Synthesis run whose kept reasoning problems are mixed in (default: dataset.synthesisRunId).',
      ),
    problems: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Problems in the mix: the first N kept, in synthesis order (default: all).'),
    search: SearchBackendSchema.optional().describe(
      'The `search` tool of search problems (an offline collection or an HTTP search API); required when the mix has search problems.',
    ),
    sandbox: SandboxCapsSchema.partial()
      .optional()
      .describe("Caps of the `python` tool's sandbox per call (defaults: schemas/reasoning-sandbox.ts)."),
  })
  .strict();
export type ReasoningMix = z.infer<typeof ReasoningMixSchema>;

/** The fields the cross-field checks of {@link GrpoSpecSchema} read. */
const CrossFieldsSchema = z.object({
  globalBatch: z.number().int().min(1),
  miniBatch: z.number().int().min(1),
  evaluateEvery: z.number().int().min(0),
  dataset: z.object({ heldOutTasks: z.number().int().min(0) }),
});

/**
 * GRPO training in the mock world with rubric rewards (seed 000 §3.2–3.4, App. A). Defaults are
 * the seed's: global batch 128 tasks, PPO mini-batch 16, n = 16 rollouts per task, 16 turns,
 * clip 0.2 / 0.28, 2 epochs.
 */
export const GrpoSpecSchema = z
  .object({
    kind: z.literal('GrpoTraining'),
    preset: PresetSchema,
    budgetUsd: RunBudgetSchema.optional(),
    name: runNameField('grpo'),
    dataset: z
      .object({
        synthesisRunId: z
          .string()
          .min(1)
          .describe(
            'Id of the Synthesis run (or `mockworld import` dataset) whose kept tasks are trained on.',
          ),
        heldOutTasks: z
          .number()
          .int()
          .min(0)
          .default(0)
          .describe('Kept tasks held out for evaluation (never trained on), drawn from the whole mix.'),
        toolUseTasks: z
          .number()
          .int()
          .min(0)
          .optional()
          .describe('Tool-use tasks in the mix: the first N kept, in synthesis order (default: all).'),
        reasoning: ReasoningMixSchema.optional().describe(
          'Math and search problems mixed in (seed 000 §3.4: 15,096 tool-use + ~4,000 reasoning tasks in one GRPO run), each rolled out with the real `python` tool (and `search`) and rewarded by answer correctness.',
        ),
      })
      .strict(),
    policy: z
      .object({
        base: PolicyBaseSchema,
        endpoint: ModelEndpointSchema.describe(
          'OpenAI-compatible server that serves the latest weights of this run.',
        ),
        sampling: PolicySamplingSchema.refine((sampling) => sampling.temperature > 0, {
          path: ['temperature'],
          message:
            'must be > 0: a greedy policy rolls out n identical answers (no advantage), and the trainer ' +
            'scores log-probs at this temperature',
        })
          .default({ temperature: 1, topP: 1, maxTokens: 1024 })
          .describe(
            "The rollouts' sampling; the trainer scores pi_old and pi_theta at its temperature and topP " +
              '(the distribution the rollouts were drawn from).',
          ),
        serving: PolicyServingSchema.optional().describe(
          'The engine and replicas rollouts are sampled from, synced after every step and checked ' +
            'before the next rollouts; unset: policy.endpoint as is (the built-in policy server reloads by itself).',
        ),
      })
      .strict(),
    judge: ModelRoleSchema.default({ sampling: { temperature: 0, topP: 1, maxTokens: 1024 } }),
    toolSimulator: ModelRoleSchema.default({ sampling: { temperature: 0.2, topP: 1, maxTokens: 512 } }),
    userSimulator: ModelRoleSchema.default({ sampling: { temperature: 0.3, topP: 1, maxTokens: 256 } }),
    globalBatch: z.number().int().min(1).max(4096).default(128).describe('Tasks per iteration.'),
    miniBatch: TrainerStepFields.mini_batch_groups
      .max(4096)
      .default(TRAINER_STEP_DEFAULTS.mini_batch_groups)
      .describe('Tasks per optimizer step (PPO mini-batch).'),
    packTokens: TrainerStepFields.pack_tokens
      .default(TRAINER_STEP_DEFAULTS.pack_tokens)
      .describe(
        "The trainer's packed micro-batch in tokens (its pack_tokens): transcripts packed end to end, no " +
          'padding; 0 pads micro-batches of 4 transcripts to the longest.',
      ),
    rolloutsPerTask: z.number().int().min(2).max(256).default(16).describe('Group size n.'),
    maxTurns: z.number().int().min(1).max(64).default(16),
    rolloutToolChoice: TurnToolChoicesSchema.describe(
      "The policy's tool choice on the first turns of every rollout and held-out episode (auto | ask_user | " +
        'task_tool | answer); later turns are auto. Default []: every turn auto, as the seed. For a small ' +
        'base that never calls a tool unprompted (the served policy then opens the call and samples the rest).',
    ),
    maxResponseTokens: z
      .number()
      .int()
      .min(1)
      .max(1_048_576)
      .default(13_000)
      .describe(
        "A rollout's response at most, in the policy endpoint's tokens: its turns and the observations " +
          'between them, as VERL counts a multi-turn response (seed App. A: 13,000). Each turn asks for ' +
          'no more than is left; a rollout that reaches it ends as length_limit.',
      ),
    truncation: TruncationRuleSchema.default('score').describe(
      "A rollout cut at maxTurns, maxResponseTokens or a turn's maxTokens: trained on with the reward " +
        "its judge gives it, told the transcript was cut (score, the default and the seed's: the rubric " +
        'reward counts the sub-goals reached, and the caps are part of the task), or left out of the ' +
        'batch (drop).',
    ),
    maxUnjudgedFraction: z
      .number()
      .min(0)
      .max(1)
      .default(0.05)
      .describe(
        "Share of an iteration's rollouts the judge may fail to grade (answers still malformed after the " +
          'repair call and one redraw; each left out of the batch and counted) before the run fails: a ' +
          'judge failing more often is misconfigured, and training on the rest would favour what it can read.',
      ),
    judgeControls: judgeControlsSchema(
      "per task, once per run: an empty transcript, which reaches no sub-goal, and one that openly does the task's first forbidden behaviour",
      'before its next iteration',
    ),
    // The trainer's eps_low, eps_high and lr (schemas/trainer-step.ts): their ranges are its.
    clipLow: TrainerStepFields.eps_low.default(TRAINER_STEP_DEFAULTS.eps_low),
    clipHigh: TrainerStepFields.eps_high.default(TRAINER_STEP_DEFAULTS.eps_high),
    learningRate: TrainerStepFields.lr
      .gt(0)
      .default(TRAINER_STEP_DEFAULTS.lr)
      .describe('AdamW learning rate of every step; > 0, or the policy never moves.'),
    epochs: z.number().int().min(1).max(100).default(2),
    evaluateEvery: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('Iterations between held-out evaluations (0 = never).'),
    benchmarks: TrainingBenchmarksSchema.optional().describe(
      'tau2 / BFCL-V4 multi-turn on the checkpoint of every `every`-th iteration and of the last, each a ' +
        'child Evaluation run `<runId>-eval-step-<N>`; their scores join the iteration metrics.',
    ),
    seed: z.number().int().min(0).default(0),
    gpuTaskQueue: z.string().min(1).default('mockworld-gpu').describe('Task queue of the trainer workers.'),
    rolloutConcurrency: z
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(256)
      .describe('Task groups rolled out at once.'),
    templates: TemplatesSchema.default({ version: 'v1', overrides: {} }),
    world: WorldSchema.default(DEFAULT_WORLD),
  })
  .strict()
  .superRefine(
    (spec, ctx) => {
      if (spec.globalBatch % spec.miniBatch !== 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['miniBatch'],
          message: `must divide globalBatch (${spec.globalBatch}); e.g. ${largestDivisorAtMost(spec.globalBatch, spec.miniBatch)}`,
        });
      }
      const serving = spec.policy?.serving;
      const lora = spec.policy?.base?.lora;
      if (serving?.sync === 'lora' && !lora) {
        ctx.addIssue({
          code: 'custom',
          path: ['policy', 'serving', 'sync'],
          message: 'lora needs policy.base.lora: a run that trains every weight has no adapters to load',
        });
      }
      if (serving && serving.engine !== 'mockworld' && serving.sync === 'full' && lora && !lora.merge) {
        ctx.addIssue({
          code: 'custom',
          path: ['policy', 'base', 'lora', 'merge'],
          message:
            'must be true to reload full weights of a LoRA run (the engine loads the merged weights); or sync: lora',
        });
      }
      if (spec.evaluateEvery > 0 && spec.dataset.heldOutTasks === 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['dataset', 'heldOutTasks'],
          message: 'must be > 0 when evaluateEvery is set',
        });
      }
    },
    // Also run when other fields are bad, so one error names every problem; the fields read here must be sound.
    { when: (payload) => CrossFieldsSchema.safeParse(payload.value).success },
  );

function largestDivisorAtMost(n: number, atMost: number): number {
  for (let d = Math.min(n, atMost); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

/** Validated GRPO training spec. */
export type GrpoSpec = z.infer<typeof GrpoSpecSchema>;
