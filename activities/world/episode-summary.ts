import type { EndReason } from '../../schemas/episode-input.js';

/** The small result of an episode; the transcript stays in `episodes`. */
export interface EpisodeSummary {
  readonly episodeId: string;
  /** Agent turns taken (model calls answered). */
  readonly turns: number;
  /** Calls of task tools, failed ones included (not `ask_user`). */
  readonly toolCalls: number;
  /** Valid `ask_user` calls answered by the user simulator. */
  readonly userQuestions: number;
  /** Calls answered with an error observation: unknown tool, arguments not JSON or against the schema. */
  readonly toolErrors: number;
  readonly endReason: EndReason;
}

/** Progress after a turn, passed to `onTurn` (small: the activity heartbeats it). */
export interface EpisodeProgress extends Omit<EpisodeSummary, 'endReason'> {
  /** Null while the episode goes on. */
  readonly endReason: EndReason | null;
}
