/** Purposes of the episodes a GRPO run plays. */
export type TrainingPurpose = 'rollout' | 'evaluation';

/**
 * The id prefix of every episode a run plays in one iteration for one purpose:
 * `<runId>/it<i>/` for training rollouts, `<runId>/eval<i>/` for held-out evaluations.
 */
export function episodePrefix(runId: string, iteration: number, purpose: TrainingPurpose): string {
  switch (purpose) {
    case 'rollout':
      return `${runId}/it${iteration}/`;
    case 'evaluation':
      return `${runId}/eval${iteration}/`;
    default:
      throw new RangeError(`purpose must be rollout or evaluation, got ${String(purpose satisfies never)}`);
  }
}

/**
 * The deterministic id of one episode: `<runId>/it<i>/<taskId>/r<k>` (rollout) or
 * `<runId>/eval<i>/<taskId>/r<k>` (evaluation). A retry finds and resumes the same episode.
 */
export function trainingEpisodeId(
  runId: string,
  iteration: number,
  taskId: string,
  sampleIndex: number,
  purpose: TrainingPurpose,
): string {
  return `${episodePrefix(runId, iteration, purpose)}${taskId}/r${sampleIndex}`;
}
