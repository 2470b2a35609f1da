/**
 * The test workflow of run-control.test.ts, bundled on its own: units of work of ten minutes of
 * workflow time each, with RunControl's safe point before each unit, as every pipeline runs them.
 */
import { sleep } from '@temporalio/workflow';
import type { JudgeStanding } from '../../schemas/judge-controls.js';
import { watchJudge } from '../../workflows/judge-watch.js';
import { RunControl } from '../../workflows/run-control.js';

export async function ControlledUnits(units: number): Promise<number> {
  const control = new RunControl('ControlledUnits', units);
  for (let done = 0; done < units; done++) {
    await control.untilResumed();
    await sleep('10 minutes');
    control.progress(done + 1, `unit ${done + 1}`);
  }
  control.setState('completed');
  return units;
}

/**
 * ControlledUnits that pauses itself after `pauseAfter` units, for `reason`, as a study does when
 * its judge fails its controls.
 */
export async function SelfPausingUnits(units: number, pauseAfter: number, reason: string): Promise<number> {
  const control = new RunControl('SelfPausingUnits', units);
  for (let done = 0; done < units; done++) {
    await control.untilResumed();
    await sleep('10 minutes');
    control.progress(done + 1, `unit ${done + 1}`);
    if (done + 1 === pauseAfter) await control.pauseFor(reason);
  }
  control.setState('completed');
  return units;
}

/**
 * ControlledUnits whose judge is watched after each unit (workflows/judge-watch.ts), with the
 * standing of unit i given: what GrpoTraining does after each iteration.
 */
export async function JudgeWatchedUnits(
  standings: readonly (JudgeStanding | null)[],
  onUnreliable: 'mark' | 'pause',
): Promise<number> {
  const control = new RunControl('JudgeWatchedUnits', standings.length);
  let judgePaused = false;
  for (let done = 0; done < standings.length; done++) {
    await control.untilResumed();
    await sleep('10 minutes');
    control.progress(done + 1, `unit ${done + 1}`);
    const standing = standings[done] ?? undefined;
    judgePaused = await watchJudge(control, standing, { minPassRate: 0.9, onUnreliable }, judgePaused);
  }
  control.setState('completed');
  return standings.length;
}
