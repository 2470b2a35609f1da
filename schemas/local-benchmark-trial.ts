import { z } from 'zod';
import { EvalEndpointSchema, EvalSamplingSchema } from './evaluation-contract.js';
import { LocalBenchmarkNameSchema } from './local-benchmarks.js';

/** Listing a local family's group (`listLocalBenchmarkTasks`). */
export const LocalListInputSchema = z
  .object({
    benchmark: LocalBenchmarkNameSchema,
    group: z.string().min(1),
    path: z.string().min(1),
    taskIds: z.array(z.string()).optional(),
    limit: z.number().int().min(1).optional(),
  })
  .strict();
export type LocalListInput = z.infer<typeof LocalListInputSchema>;

/** One (problem, trial) of a local family's group (`runLocalBenchmarkTrial`). */
export const LocalTrialInputSchema = z
  .object({
    evaluationId: z.string().min(1),
    benchmark: LocalBenchmarkNameSchema,
    group: z.string().min(1),
    taskId: z.string().min(1),
    trial: z.number().int().min(0),
    trials: z.number().int().min(1),
    path: z.string().min(1),
    policy: EvalEndpointSchema,
    sampling: EvalSamplingSchema,
    /** The family's settings; its registry entry parses them. */
    settings: z.unknown(),
  })
  .strict();
export type LocalTrialInput = z.input<typeof LocalTrialInputSchema>;
