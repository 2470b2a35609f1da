/**
 * One record of a trainer batch: a line of a `jsonl` batch, or the `payload` of a `trainer_batches`
 * row. Written by the TypeScript side (activities/training/trainer-batch.ts for GRPO,
 * activities/study/cell-dataset.ts for SFT), read and validated by the Python trainer against the
 * JSON Schema emitted from here. Other keys of a record or a message are ignored by the trainer.
 */
import { z } from 'zod';

/** Chat roles the trainer tokenizes. */
export const TRAINER_ROLES = ['system', 'user', 'assistant', 'tool'] as const;

/** An OpenAI chat message; `tool_calls`, `tool_call_id` and other keys pass through to the chat template. */
export const TrainerMessageSchema = z.looseObject({
  role: z.enum(TRAINER_ROLES),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]).optional(),
});

const ASSISTANT_TURN = "needs an assistant turn: only the assistant's tokens are trained on";

/**
 * A transcript: only assistant tokens carry loss, so a transcript without an assistant turn is
 * refused. JSON Schema says that with `contains` (added through meta); zod with the refinement.
 */
export const TrainerMessagesSchema = z
  .array(TrainerMessageSchema)
  .min(1)
  .refine((messages) => messages.some((m) => m.role === 'assistant'), ASSISTANT_TURN)
  .meta({
    description: `The transcript; it ${ASSISTANT_TURN}.`,
    contains: { type: 'object', properties: { role: { const: 'assistant' } }, required: ['role'] },
  });

/** The function tools offered in the transcript (OpenAI specs), rendered by the chat template. */
export const TrainerToolsSchema = z.array(z.record(z.string(), z.unknown())).nullable().optional();

/** An SFT record: a transcript whose assistant turns are learned. */
export const SftBatchRecordSchema = z.looseObject({
  messages: TrainerMessagesSchema,
  tools: TrainerToolsSchema,
});

/** A GRPO record: one scored rollout of a group (the rollouts of one task). */
export const GrpoBatchRecordSchema = z.looseObject({
  group_id: z.union([z.string(), z.number().int()]).describe('The GRPO group: the task the rollout is of.'),
  reward: z
    .number()
    .describe(
      'R(τ) from the judge, finite: unscored rollouts are retried or dropped upstream, never defaulted.',
    ),
  messages: TrainerMessagesSchema,
  tools: TrainerToolsSchema,
});

/** A GRPO record as written. */
export type GrpoBatchRecord = z.input<typeof GrpoBatchRecordSchema>;
/** An SFT record as written. */
export type SftBatchRecord = z.input<typeof SftBatchRecordSchema>;
