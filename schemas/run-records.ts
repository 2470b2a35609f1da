import { z } from 'zod';
import { RunStateSchema } from './run-status.js';

/** Input of the activity that registers a run in PostgreSQL. */
export const RunStartSchema = z.object({
  runId: z.string().min(1),
  kind: z.string().min(1),
  spec: z.unknown(),
});
export type RunStart = z.infer<typeof RunStartSchema>;

/** What recording a run's start answers: where its data is shown (absent in histories from before). */
export const RunStartedSchema = z.object({
  viewerUrl: z.string().min(1),
  /** The spec's budget (USD), if it set one. */
  budgetUsd: z.number().positive().optional(),
});
export type RunStarted = z.infer<typeof RunStartedSchema>;

/** Input of the activity that records a run's pause for its budget (reason) or its end (null). */
export const RunPauseSchema = z.object({ runId: z.string().min(1), reason: z.string().min(1).nullable() });
export type RunPause = z.infer<typeof RunPauseSchema>;

/**
 * A run's page in the results viewer: `viewerUrl` as configured (MOCKWORLD_VIEWER_URL), else the
 * local viewer on `port`.
 */
export function viewerRunUrl(
  env: { MOCKWORLD_VIEWER_URL?: string; MOCKWORLD_VIEWER_PORT: number },
  runId: string,
): string {
  const base = env.MOCKWORLD_VIEWER_URL ?? `http://localhost:${env.MOCKWORLD_VIEWER_PORT}`;
  return `${base.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)}`;
}

/** Input of the activity that records how a run ended and its small summary. */
export const RunFinishSchema = z.object({
  runId: z.string().min(1),
  state: RunStateSchema,
  summary: z.record(z.string(), z.unknown()).optional(),
});
export type RunFinish = z.infer<typeof RunFinishSchema>;
