import { z } from 'zod';
import { LocalBenchmarkNameSchema } from './local-benchmarks.js';
import { fileListFields, fileTrialFields } from './reasoning-evaluation.js';

/** Listing a local family's group (`listLocalBenchmarkTasks`). */
export const LocalListInputSchema = z
  .object({ benchmark: LocalBenchmarkNameSchema, ...fileListFields })
  .strict();
export type LocalListInput = z.infer<typeof LocalListInputSchema>;

/** One (problem, trial) of a local family's group (`runLocalBenchmarkTrial`). */
export const LocalTrialInputSchema = z
  .object({
    benchmark: LocalBenchmarkNameSchema,
    ...fileTrialFields,
    /** The family's settings; its registry entry parses them. */
    settings: z.unknown(),
  })
  .strict();
export type LocalTrialInput = z.input<typeof LocalTrialInputSchema>;
