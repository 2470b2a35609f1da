import { z } from 'zod';

/** Coarse state of any mockworld run, as shown by `mockworld status` and the UI's search attribute. */
export const RunStateSchema = z.enum(['running', 'paused', 'completed', 'failed', 'cancelled']);
export type RunState = z.infer<typeof RunStateSchema>;

/** What every pipeline workflow answers to the `status` query. */
export const RunStatusSchema = z.object({
  kind: z.string(),
  state: RunStateSchema,
  /** Units of work finished (steps, tasks, iterations, cells: the kind decides). */
  done: z.number().int().nonnegative(),
  /** Units of work planned. */
  total: z.number().int().nonnegative(),
  /** What the run is doing now, in a few words. */
  stage: z.string(),
  /** Counts by stage or outcome, small and bounded. */
  counts: z.record(z.string(), z.number()).default({}),
});
export type RunStatus = z.infer<typeof RunStatusSchema>;
