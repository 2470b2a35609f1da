/**
 * What a run does when its rubric judge fails its controls (issue 36): it names the judge as
 * unreliable in the run's details in the Temporal UI, and with `onUnreliable: pause` pauses itself
 * once at its next safe point, saying why. The standing itself is schemas/judge-controls.ts.
 */
import { patched } from '@temporalio/workflow';
import type { JudgeControls, JudgeStanding } from '../schemas/judge-controls.js';
import type { RunControl } from './run-control.js';

/**
 * Shows the standing in the Temporal UI and, when it is unreliable and the spec says pause, pauses
 * the run (once: whoever resumes it has seen why). Returns whether the run has paused for it.
 */
export async function watchJudge(
  control: RunControl,
  standing: JudgeStanding | undefined,
  settings: JudgeControls,
  pausedBefore: boolean,
): Promise<boolean> {
  if (!standing) return pausedBefore;
  control.warn('judge', standing.reason ?? undefined);
  if (!standing.reason || settings.onUnreliable !== 'pause' || pausedBefore) return pausedBefore;
  if (!patched('rubric-judge-controls')) return pausedBefore;
  await control.pauseFor(`${standing.reason}; resume to go on regardless`);
  return true;
}
