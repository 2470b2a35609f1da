/**
 * One trainer step (`trainer.grpoStep`, `trainer.sftStep`): its hyper-parameters, the reference to
 * its batch, its input and its result. Defaults follow the seed paper (Mock Worlds, Real Skills,
 * App. A: GRPO in VERL, PPO mini-batch of 16 prompts, clip ratio between 0.2 and 0.28); values the
 * paper does not state (learning rate, weight decay, gradient clipping) take VERL's actor defaults.
 * Emitted as JSON Schema into schemas/json/trainer/ for the Python trainer (emit-json-schema.ts).
 */
import { z } from 'zod';
import { TrainerModelSpecSchema } from './trainer-model.js';

/** Table the trainer reads `postgres` batch references from, unless the reference names another. */
export const TRAINER_BATCHES_TABLE = 'trainer_batches';

/** A training run's id (the workflow id): a directory name under the trainer's checkpoint root. */
export const TrainerRunIdSchema = z.string().min(1).describe('The training run (the workflow id).');

/** An applied step: steps count from 1; step 0 is the initial policy (the model spec). */
export const TrainerStepNumberSchema = z.number().int().min(1);

/**
 * The range of each step hyper-parameter, without its default, so that the specs that feed them
 * (GrpoTraining's clip and learning rate, ScalingStudy's SFT settings) are built from these and
 * can never accept a value the trainer refuses once the run has spent its rollouts.
 */
export const TrainerStepFields = {
  lr: z
    .number()
    .min(0)
    .max(1)
    .describe(
      'AdamW learning rate. 0 is allowed: the last step of a schedule that decays to 0 moves nothing.',
    ),
  weight_decay: z.number().min(0).max(1).describe('AdamW (decoupled) weight decay.'),
  max_grad_norm: z.number().gt(0).describe('Global gradient-norm clip per optimizer update.'),
  eps_low: z
    .number()
    .gt(0)
    .lt(1)
    .describe('Lower clip: ratio >= 1 - eps_low; below 1 so that the bound stays positive.'),
  eps_high: z
    .number()
    .gt(0)
    .lt(1)
    .describe('Upper clip: ratio <= 1 + eps_high (the seed: 0.28 against eps_low 0.2, "clip-higher").'),
  kl_coef: z.number().min(0).describe('Weight of the k3 KL to the step-0 policy; 0 turns it off.'),
  adv_eps: z
    .number()
    .gt(0)
    .describe('Added to the group std; a group whose std is below it has zero variance and zero advantage.'),
  mini_batch_groups: z
    .number()
    .int()
    .min(1)
    .describe('Groups (prompts) per optimizer update; a step makes ceil(groups / this) updates.'),
  micro_batch_size: z
    .number()
    .int()
    .min(1)
    .describe('Sequences per forward/backward (gradient accumulation).'),
  pack_tokens: z
    .number()
    .int()
    .min(0)
    .describe(
      'Token budget of a packed micro-batch: transcripts are packed end to end into rows of at most this ' +
        'many tokens (no padding; each attends only to itself), one row per forward. 0: micro_batch_size ' +
        'transcripts per forward, padded to the longest.',
    ),
  max_seq_len: z
    .number()
    .int()
    .min(2)
    .describe(
      'Tokens per transcript (one prediction needs two); longer ones are cut on the right and counted.',
    ),
  temperature: z
    .number()
    .gt(0)
    .max(2)
    .describe(
      "GRPO: the rollouts' sampling temperature. pi_old and pi_theta are softmax(logits / temperature), " +
        'the distribution the rollouts were drawn from; SFT ignores it.',
    ),
  top_p: z
    .number()
    .gt(0)
    .max(1)
    .describe(
      "GRPO: the rollouts' nucleus. Log-probs are renormalized over the tokens the sampler kept; SFT ignores it.",
    ),
} as const;

/** The trainer's defaults: the paper's where it states them (clip, mini-batch), VERL's otherwise. */
export const TRAINER_STEP_DEFAULTS = {
  lr: 1e-6,
  weight_decay: 0.01,
  max_grad_norm: 1.0,
  eps_low: 0.2,
  eps_high: 0.28,
  kl_coef: 0,
  adv_eps: 1e-6,
  mini_batch_groups: 16,
  micro_batch_size: 4,
  pack_tokens: 0,
  max_seq_len: 16384,
  temperature: 1,
  top_p: 1,
} as const satisfies Record<keyof typeof TrainerStepFields, number>;

/** Hyper-parameters of one step (GRPO or SFT), recorded with it; every field optional. */
export const TrainerStepConfigSchema = z.strictObject(
  Object.fromEntries(
    Object.entries(TrainerStepFields).map(([name, field]) => [
      name,
      field.default(TRAINER_STEP_DEFAULTS[name as keyof typeof TrainerStepFields]),
    ]),
  ) as {
    [K in keyof typeof TrainerStepFields]: z.ZodDefault<(typeof TrainerStepFields)[K]>;
  },
);

/** A batch in a JSONL file, one record per line. */
export const JsonlBatchRefSchema = z.strictObject({
  kind: z.literal('jsonl'),
  path: z
    .string()
    .regex(/^\//, 'must be an absolute path')
    .describe('Absolute path of the file (the trainer resolves nothing against its own directory).'),
});

/**
 * Rows of `table(run_id text, step int, payload jsonb)`, one record per row, read from the
 * trainer's DATABASE_URL; `run_id` and `step` default to the step's own.
 */
export const PostgresBatchRefSchema = z.strictObject({
  kind: z.literal('postgres'),
  table: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be an SQL identifier')
    .default(TRAINER_BATCHES_TABLE),
  run_id: TrainerRunIdSchema.optional(),
  step: TrainerStepNumberSchema.optional(),
});

/** Where a step's batch is (claim-check: a step names its rollouts, never carries them). */
export const TrainerBatchRefSchema = z.discriminatedUnion('kind', [
  JsonlBatchRefSchema,
  PostgresBatchRefSchema,
]);

/** Input of `trainer.grpoStep` and `trainer.sftStep`. */
export const TrainerStepInputSchema = z.strictObject({
  run_id: TrainerRunIdSchema,
  step: TrainerStepNumberSchema.describe('Step n needs step n - 1 applied; step 0 is the initial policy.'),
  batch_ref: TrainerBatchRefSchema,
  model: TrainerModelSpecSchema.optional().describe(
    'Required until step 1 is applied; afterwards optional, and if given it must equal the recorded one.',
  ),
  config: TrainerStepConfigSchema.optional(),
});

const metric = (description: string) => z.number().nullable().describe(description);
const count = (description: string) => z.number().int().min(0).describe(description);

/** What a step reports on an SFT batch and on a GRPO batch alike. Non-finite values are null. */
const CommonMetrics = {
  loss: metric('Mean loss of the optimizer updates (SFT: token-mean NLL before the update).'),
  grad_norm: metric('Mean finite pre-clip gradient norm; null when every update was skipped.'),
  skipped_updates: count('Updates skipped for a non-finite gradient norm.'),
  num_samples: count('Records in the batch.'),
  num_tokens: count('Tokens with loss (the assistant turns).'),
  num_updates: count('Optimizer updates applied or skipped.'),
  truncated_samples: count('Transcripts cut to max_seq_len.'),
  duration_s: z.number().min(0).describe('Seconds the update took (loading and saving excluded).'),
  tokens_per_s: metric(
    'Transcript tokens of the batch per second of the update (every rank together).',
  ).optional(),
  padding_fraction: metric('Share of forward positions that were padding (0 when packed).').optional(),
  peak_memory_bytes: count(
    'Peak memory of the busiest rank: CUDA tensors allocated during the step, or on CPU the peak RSS of the process.',
  ).optional(),
  peak_memory_bytes_per_rank: z
    .array(z.number().int().min(0))
    .describe('peak_memory_bytes of each rank.')
    .optional(),
  world_size: z
    .number()
    .int()
    .min(1)
    .describe('Processes that applied the step (torchrun ranks).')
    .optional(),
};

/** Metrics of an SFT step. */
export const SftStepMetricsSchema = z.strictObject(CommonMetrics);

/** Metrics of a GRPO step (seed paper §3.1 and App. A). */
export const GrpoStepMetricsSchema = z.strictObject({
  ...CommonMetrics,
  clip_frac: metric('Share of loss tokens where the clipped term won.'),
  clip_frac_low: metric('Share of loss tokens clipped below: A < 0 and ratio < 1 - eps_low.'),
  clip_frac_high: metric('Share of loss tokens clipped above: A > 0 and ratio > 1 + eps_high.'),
  ratio_mean: metric('Mean pi_theta / pi_old over loss tokens.'),
  approx_kl: metric('k3 estimate of KL(pi_old || pi_theta) per loss token.'),
  reward_mean: metric('Mean reward of the batch.'),
  reward_std: metric('Population standard deviation of the rewards.'),
  adv_abs_mean: metric('Mean |advantage|.'),
  num_groups: count('GRPO groups (tasks) in the batch.'),
  zero_variance_groups: count('Groups whose rewards had no variance: zero advantage, no gradient.'),
  ref_kl: metric('k3 KL to the step-0 policy per loss token; only when kl_coef > 0.').optional(),
});

const StepResultFields = {
  run_id: TrainerRunIdSchema,
  step: TrainerStepNumberSchema,
  model_path: z
    .string()
    .min(1)
    .describe(
      "This step's weights directory (save_pretrained layout): full weights, or merged ones for a LoRA " +
        'run with merge; for a LoRA run without merge, the adapter directory.',
    ),
  adapter_path: z
    .string()
    .min(1)
    .nullable()
    .describe("This step's LoRA adapter directory (peft layout); null when the run trains every weight."),
  applied_at: z.string().min(1).describe('When the step was first applied (ISO 8601, UTC).'),
  replayed: z.boolean().describe('True when the step had already been applied and nothing was stepped.'),
};

/** Output of `trainer.grpoStep` and `trainer.sftStep`. */
export const TrainerStepResultSchema = z.discriminatedUnion('kind', [
  z.strictObject({ ...StepResultFields, kind: z.literal('grpo'), metrics: GrpoStepMetricsSchema }),
  z.strictObject({ ...StepResultFields, kind: z.literal('sft'), metrics: SftStepMetricsSchema }),
]);

/**
 * What a step heartbeats: between micro-batches, and from a background thread every third of the
 * heartbeat timeout, so a slow save still heartbeats.
 */
export const TrainerStepHeartbeatSchema = z.strictObject({
  phase: z.enum(['start', 'old_logprobs', 'ref_logprobs', 'update', 'save']),
  done: z.number().int().min(0),
  total: z.number().int().min(0),
});

/** Input of `trainer.grpoStep` / `trainer.sftStep` as sent (defaults may be left out). */
export type TrainerStepInput = z.input<typeof TrainerStepInputSchema>;
/** Output of `trainer.grpoStep` / `trainer.sftStep`. */
export type TrainerStepResult = z.output<typeof TrainerStepResultSchema>;
/** A `postgres` batch reference as the TypeScript side writes it. */
export type PostgresBatchRef = z.input<typeof PostgresBatchRefSchema>;
