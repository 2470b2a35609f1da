/**
 * What the judge is told about a transcript cut before the agent finished (issue 18): without it,
 * a transcript that stops mid-task reads like one that ended, and a judge may credit steps the
 * agent never reached. Episodes that ended on their own get no note, so their judge prompt (and
 * its cache key) is what it always was. Pure.
 */
import type { EndReason } from '../../schemas/episode-input.js';

const WHY: Partial<Record<EndReason, string>> = {
  length_limit: "the assistant's response reached its token limit",
  max_turns: 'the assistant reached its turn limit',
  transcript_limit: 'the transcript reached its size limit',
};

/** The line appended to the judge's transcript of an episode that ended this way ('' if none). */
export function truncationNote(endReason: string | null): string {
  const why = endReason === null ? undefined : WHY[endReason as EndReason];
  return why
    ? `\n\n[The episode was cut off here: ${why} before it finished. Credit only what the transcript shows was done.]`
    : '';
}
