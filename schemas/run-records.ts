import { z } from 'zod';
import { RunStateSchema } from './run-status.js';

/** Input of the activity that registers a run in PostgreSQL. */
export const RunStartSchema = z.object({
  runId: z.string().min(1),
  kind: z.string().min(1),
  spec: z.unknown(),
});
export type RunStart = z.infer<typeof RunStartSchema>;

/** Input of the activity that records how a run ended and its small summary. */
export const RunFinishSchema = z.object({
  runId: z.string().min(1),
  state: RunStateSchema,
  summary: z.record(z.string(), z.unknown()).optional(),
});
export type RunFinish = z.infer<typeof RunFinishSchema>;
