import { z } from 'zod';
import { PolicyBaseSchema } from './grpo-spec.js';
import { SftSettingsSchema } from './scaling-study-spec.js';
import { runNameField } from './run-name.js';

/**
 * Supervised fine-tuning on the teacher's kept demonstrations of a Synthesis run (seed 000 App. B:
 * RL against SFT on the teacher's trajectories at equal data size). Each demonstration is a chat
 * with tool calls; only the assistant's tokens carry loss. The held-out split is GrpoTraining's
 * (same seed and `heldOutTasks`, same tasks), so an SFT run and a GRPO run can be compared on the
 * same held-out tasks. Defaults of the optimizer settings are the study's (SftSettingsSchema).
 */
export const SftSpecSchema = z
  .object({
    kind: z.literal('SftTraining'),
    name: runNameField('sft'),
    dataset: z
      .object({
        synthesisRunId: z
          .string()
          .min(1)
          .describe("Id of the Synthesis run whose kept tasks' kept demonstrations are trained on."),
        source: z
          .enum(['demonstrations', 'reasoning'])
          .default('demonstrations')
          .describe(
            "demonstrations: the kept tool-use tasks' teacher demonstrations. reasoning: the kept reasoning " +
              "problems' correct solutions (a Synthesis reasoning section, e.g. keep: correct for rejection " +
              'sampling), each problem a unit of the held-out split.',
          ),
        heldOutTasks: z
          .number()
          .int()
          .min(0)
          .default(0)
          .describe(
            'Kept tasks held out (their demonstrations never trained on): the split a GrpoTraining run with ' +
              'the same seed and heldOutTasks holds out.',
          ),
        examples: z
          .number()
          .int()
          .min(1)
          .max(10_000_000)
          .optional()
          .describe(
            'Train on this many demonstrations (a seeded sample of those of the training tasks), e.g. as ' +
              'many as a GRPO run trains on; the run refuses to start when fewer are kept. Unset: all.',
          ),
      })
      .strict(),
    policy: z
      .object({
        base: PolicyBaseSchema.describe("The student's starting weights, as GrpoTraining's policy.base."),
      })
      .strict(),
    ...SftSettingsSchema.shape,
    seed: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe("Seeds the held-out split, the sample of `examples` and every epoch's order."),
    gpuTaskQueue: z.string().min(1).default('mockworld-gpu').describe('Task queue of the trainer workers.'),
  })
  .strict();

/** Validated SFT training spec. */
export type SftSpec = z.infer<typeof SftSpecSchema>;
