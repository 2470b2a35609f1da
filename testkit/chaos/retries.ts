/**
 * Which injected fault explains an activity retry. A retry no fault explains is a finding: a live
 * worker's activity timed out (heartbeats starved), or a call was given up and asked again for no
 * reason the chaos run made. The report lists them; the slow-model fault (g) must cause none.
 */
import type { ActivityRetry } from './observe.js';
import type { ChaosFaultKind, FaultRecord } from './types.js';

/**
 * How long after a fault a retry may still be its doing: the trainer's and the evaluation trials'
 * heartbeat timeout is a minute, the CPU activities' 20 s, and a retry waits out its backoff on
 * top, which doubles with each attempt from 1 s to at most a minute (backoffS): the first full run
 * of (i) saw a trial's 7th attempt start 92 s after the kill that cut its 6th.
 */
const WINDOW_S = 90;

/** The backoff before attempt `attempt` of the policies here (1 s doubling, at most 60 s). */
function backoffS(attempt: number): number {
  return Math.min(60, 2 ** Math.max(0, attempt - 2));
}

/** How a collective fails on the ranks left when one dies (gloo's transport, torch's wrappers). */
const COLLECTIVE_FAILURE = /gloo|Connection (closed|reset)|peer|Broken pipe|DistBackendError|ProcessGroup/i;

/** The fault kinds that can make an activity of this type fail, and the failure each leaves. */
function causes(retry: ActivityRetry): Array<{ kind: ChaosFaultKind; matches: (cause: string) => boolean }> {
  const timeout = (cause: string) => cause.endsWith('-timeout');
  const failure = (cause: string) => cause.startsWith('failure');
  if (retry.type.startsWith('trainer.')) {
    return [
      { kind: 'trainer-kill', matches: timeout },
      // A rank's death stops the group (torchrun stops rank 0 too): rank 0's attempt times out, or
      // fails first in a collective whose peer is gone.
      { kind: 'trainer-rank-kill', matches: (c) => timeout(c) || (failure(c) && COLLECTIVE_FAILURE.test(c)) },
      { kind: 'checkpoint-disk-full', matches: (c) => /No space left|ENOSPC/i.test(c) },
      // The trainer reads its batch from PostgreSQL.
      { kind: 'postgres-restart', matches: failure },
    ];
  }
  if (retry.type.startsWith('eval.')) {
    return [
      { kind: 'evaluation-worker-kill', matches: timeout },
      // A trial stores its row in PostgreSQL.
      { kind: 'postgres-restart', matches: failure },
    ];
  }
  return [
    { kind: 'cpu-worker-kill', matches: timeout },
    { kind: 'gateway-kill', matches: (c) => failure(c) && /gateway/i.test(c) },
    { kind: 'postgres-restart', matches: failure },
  ];
}

/** The fault that explains `retry` (started at `atS`): one of a kind that leaves its failure, shortly before. */
export function explainRetry(
  retry: ActivityRetry & { atS: number },
  faults: readonly FaultRecord[],
): ChaosFaultKind | undefined {
  for (const { kind, matches } of causes(retry)) {
    if (!matches(retry.cause)) continue;
    if (
      faults.some(
        (f) =>
          f.kind === kind &&
          f.atS <= retry.atS &&
          retry.atS - f.atS <= WINDOW_S + backoffS(retry.attempt) + (f.backMs ?? 0) / 1000,
      )
    )
      return kind;
  }
  return undefined;
}
