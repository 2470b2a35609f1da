/**
 * The wall-clock bound of one attempt of a trial on the CPU worker (the Evaluation spec's
 * `trialTimeoutMinutes`), as the Python evaluation worker bounds its tau2 and BFCL trials
 * (workers/evaluation/mockworld_eval/runner.py): the policy's episode gets a signal that also
 * aborts at the bound, so a model call or a tool that never answers ends there, and the trial is
 * stored with reward 0, termination `time_limit` and the reason. Judging is not bounded by it: a
 * judge that does not answer is a judge failure, never a score.
 */
import { ModelRequestRejectedError } from '../llm/index.js';
import type { EpisodeHooks } from '../world/episode-loop.js';
import type { TrialOutcome } from './trial-store.js';

/** Termination of a trial ended at its bound (the Python worker records the same). */
export const TIME_LIMIT_TERMINATION = 'time_limit';

/** What a trial's play gets: the episode's hooks, bounded, and the activity's own signal. */
export interface TrialSignals {
  /** The episode's hooks: their signal aborts at the bound or when the activity is cancelled. */
  readonly episode: EpisodeHooks;
  /** The activity's cancellation only: for judging. */
  readonly activity: AbortSignal | undefined;
}

/**
 * Plays a trial under its bound: the outcome `play` returns; a model's refusal (a 4xx) as a
 * refused outcome; the bound's expiry as a `time_limit` outcome. Any other error (a cancellation
 * among them) is thrown.
 */
export async function boundedTrial(
  hooks: EpisodeHooks,
  wallSeconds: number | undefined,
  play: (signals: TrialSignals) => Promise<TrialOutcome>,
): Promise<TrialOutcome> {
  const bound = new AbortController();
  const expiry = new Error('the trial reached its wall-clock bound');
  const timer =
    wallSeconds === undefined ? undefined : setTimeout(() => bound.abort(expiry), wallSeconds * 1000);
  let turns = 0;
  const episode: EpisodeHooks = {
    onTurn: (progress) => {
      turns += 1;
      return hooks.onTurn?.(progress);
    },
    signal: hooks.signal ? AbortSignal.any([hooks.signal, bound.signal]) : bound.signal,
  };
  try {
    return await play({ episode, activity: hooks.signal });
  } catch (error) {
    // Only the bound's own abort is a time limit: a judge that fails after it is still a failure.
    if (causedBy(error, expiry)) return timedOut(wallSeconds!, turns);
    if (error instanceof ModelRequestRejectedError) return modelRefused(error);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `error` is `reason` or was caused by it. */
function causedBy(error: unknown, reason: Error): boolean {
  let at: unknown = error;
  for (let depth = 0; at instanceof Error && depth < 16; depth++, at = at.cause)
    if (at === reason) return true;
  return false;
}

function timedOut(wallSeconds: number, turns: number): TrialOutcome {
  return {
    reward: 0,
    termination: TIME_LIMIT_TERMINATION,
    steps: turns,
    promptTokens: 0,
    completionTokens: 0,
    failure:
      `the trial ran past its wall-clock bound of ${boundText(wallSeconds)} (the Evaluation spec's ` +
      `trialTimeoutMinutes) after ${turns} turns and was ended: a model or tool that does not answer ends here`,
    detail: 'time limit',
    trajectory: [],
  };
}

/** `30 min`, or seconds when the bound is not whole minutes. */
export function boundText(wallSeconds: number): string {
  return wallSeconds % 60 === 0 ? `${wallSeconds / 60} min` : `${wallSeconds} s`;
}

/** A trial the model refused (a 4xx: too long a context, say): its failure, reward 0, as the Python worker records one. */
export function modelRefused(error: ModelRequestRejectedError): TrialOutcome {
  return {
    reward: 0,
    termination: 'model_error',
    steps: 0,
    promptTokens: 0,
    completionTokens: 0,
    failure: error.message.slice(0, 2_000),
    detail: 'the model refused the request',
    trajectory: [],
  };
}
