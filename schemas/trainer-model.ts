/**
 * The model a trainer run trains: the one definition of the model spec of the Python trainer's
 * activities (`model` of `trainer.grpoStep`, `trainer.sftStep`, `trainer.registerRun`), of the
 * policy server's `--base`, and of the policy base of the GrpoTraining and ScalingStudy specs.
 * Emitted as JSON Schema into schemas/json/trainer/ (emit-json-schema.ts); the trainer validates
 * against those files, so a value accepted here is never refused by the trainer later.
 */
import { z } from 'zod';

/**
 * Parameter dtypes the trainer loads a pretrained model in. No float16: the trainer does no loss
 * scaling, and float16 gradients and AdamW moments underflow (bfloat16 has float32's range).
 */
export const TrainerDtypeSchema = z
  .enum(['float32', 'bfloat16'], {
    error: 'expected "float32" or "bfloat16" (float16 is not trainable: the trainer does no loss scaling)',
  })
  .describe('Parameter dtype (also of the AdamW state): float32 or bfloat16; float16 is not trainable here.');

/**
 * LoRA (Hu et al., 2021) with peft: the base weights stay frozen and only low-rank adapters
 * `B A` (rank `r`, scaled by `alpha / r`) on `target_modules` are trained, checkpointed (the
 * step's `adapter/` directory, peft's layout) and served as adapters. `merge` also writes the
 * merged full weights (`model/`) at every step, for engines that reload full weights.
 */
export const TrainerLoraSchema = z.strictObject({
  r: z.number().int().min(1).max(1024).default(16).describe('Adapter rank.'),
  alpha: z.number().gt(0).default(32).describe('Scale numerator: the update is (alpha / r) B A x.'),
  dropout: z.number().min(0).lt(1).default(0).describe('Dropout on the adapter input (0: none).'),
  target_modules: z
    .array(z.string().regex(/^[A-Za-z0-9_.]+$/, 'a module name'))
    .min(1)
    .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'])
    .describe("Names of the linear modules that get adapters (Qwen3's attention and MLP projections)."),
  merge: z
    .boolean()
    .default(false)
    .describe('Also save the merged full weights of every step (model/), e.g. for a full-weight reload.'),
});

const size = (fallback: number, description: string) =>
  z.number().int().min(1).default(fallback).describe(description);

/** The fields of a tiny model, without the cross-field rule (so specs can pick from them). */
export const TinyModelFieldsSchema = z.strictObject({
  kind: z.literal('tiny'),
  seed: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('torch seed of the random initialization: same seed, same weights.'),
  hidden_size: size(32, 'Width of the residual stream; num_heads must divide it.'),
  num_layers: size(2, 'Decoder layers.'),
  num_heads: size(4, 'Attention heads; must divide hidden_size.'),
  num_kv_heads: size(2, 'Key/value heads (GQA); must divide num_heads.'),
  intermediate_size: size(64, 'MLP width.'),
  lora: TrainerLoraSchema.optional().describe('Train LoRA adapters instead of every weight.'),
});

/**
 * A randomly initialized Qwen3-architecture model built in code, with the trainer's byte tokenizer
 * (tests and CPU runs). The head divisibility rule cannot be written in JSON Schema: the trainer
 * checks it too (mockworld_trainer/config.py), with the same message.
 */
export const TinyModelSpecSchema = TinyModelFieldsSchema.superRefine((spec, ctx) => {
  if (spec.hidden_size % spec.num_heads !== 0 || spec.num_heads % spec.num_kv_heads !== 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['num_heads'],
      message: 'num_heads must divide hidden_size and num_kv_heads must divide num_heads',
    });
  }
});

/** A causal LM saved with `save_pretrained` in a local directory (weights, config, tokenizer, chat template). */
export const PretrainedModelSpecSchema = z.strictObject({
  kind: z.literal('pretrained'),
  path: z
    .string()
    .min(1)
    .describe('Local directory of a transformers model (shared storage on a cluster); no hub is contacted.'),
  dtype: TrainerDtypeSchema.default('float32'),
  lora: TrainerLoraSchema.optional().describe('Train LoRA adapters instead of every weight.'),
});

/**
 * A quantized GGUF file (llama.cpp's format, e.g. the embedded SmolLM2-135M-Instruct). The trainer
 * de-quantizes it once into a transformers directory cached by the file's sha256
 * (`$MOCKWORLD_HOME/models/transformers/`), and from there on trains and serves it as a pretrained
 * model: checkpoints, LoRA and weight sync as for any base.
 */
export const GgufModelSpecSchema = z.strictObject({
  kind: z.literal('gguf'),
  path: z
    .string()
    .regex(/\.gguf$/i, 'a .gguf file')
    .describe('Local path of the .gguf file (weights, tokenizer and chat template in one file).'),
  dtype: TrainerDtypeSchema.default('float32'),
  lora: TrainerLoraSchema.optional().describe('Train LoRA adapters instead of every weight.'),
});

/** What a trainer run trains (`kind` names which). */
export const TrainerModelSpecSchema = z.discriminatedUnion('kind', [
  TinyModelSpecSchema,
  PretrainedModelSpecSchema,
  GgufModelSpecSchema,
]);

/** LoRA settings as written in a spec. */
export type TrainerLoraInput = z.input<typeof TrainerLoraSchema>;

/** A model spec as sent to the trainer (defaults may be left out). */
export type TrainerModelSpecInput = z.input<typeof TrainerModelSpecSchema>;
/** A model spec with every default filled, as the trainer records it in run.json. */
export type TrainerModelSpec = z.output<typeof TrainerModelSpecSchema>;
