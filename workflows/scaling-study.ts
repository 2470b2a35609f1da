import {
  executeChild,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import type { RunActivities } from '../activities/runs.js';
import { studyCells, studyStreams, type Cell } from '../activities/study/grid.js';
import type { JudgeStanding } from '../activities/study/judge-standing.js';
import type { ScalingStudySpec } from '../schemas/scaling-study-spec.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { mapBounded } from './bounded.js';
import { linkViewer, RunControl } from './run-control.js';
import { validateSpec } from './spec-guard.js';
import { cellStatesQuery, type CellState } from './study-controls.js';
import { StudyCell, type CellResult } from './study-cell.js';
import { StudySampling, type Derivation } from './study-sampling.js';
import { endRunOnError } from './run-end.js';

const { recordRunStart, recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);
const study = proxyActivities<MockworldActivities>(LONG_ACTIVITY);
const { checkStudyJudge } = proxyActivities<MockworldActivities>(SHORT_ACTIVITY);

/** What a finished study returns; tables and plots are in its report. */
export interface StudySummary {
  readonly cells: number;
  readonly trained: number;
  readonly alreadyDone: number;
  readonly failed: number;
  readonly reportPath: string;
  /** Whether the figures can be believed: the judge's control pass rate, who decided, toy roles. */
  readonly judge?: {
    readonly unreliable: boolean;
    readonly controlPassRate: number | null;
    readonly reason: string | null;
    readonly toyLabels: readonly string[];
  };
}

/**
 * A synthetic-data scaling study (seed 002): load Q and the test set, sample every teacher stream
 * the protocols need (RS first), then train and evaluate every cell of the grid with bounded
 * concurrency, then fit and report. Cells already evaluated (this study id, earlier runs) are
 * skipped, so a study can be re-run or extended with more budgets or seeds and only new cells
 * train. Pause stops new questions and cells from starting; work in flight finishes.
 */
export async function ScalingStudy(input: unknown): Promise<StudySummary> {
  const spec: ScalingStudySpec = await validateSpec('ScalingStudy', input);
  const studyId = workflowInfo().workflowId;
  const streams = studyStreams(spec);
  const cells = studyCells(spec);
  const control = new RunControl('ScalingStudy', streams.length + cells.length);
  const states: Record<string, CellState> = Object.fromEntries(cells.map((c) => [c.cellId, 'queued']));
  setHandler(cellStatesQuery, () => states, { description: cellStatesQuery.description });
  let streamsDone = 0;
  const counts = () => {
    const byState: Record<string, number> = { streams: streamsDone };
    for (const state of Object.values(states)) byState[state] = (byState[state] ?? 0) + 1;
    return byState;
  };
  const report = (stage: string) =>
    control.progress(
      streamsDone + Object.values(states).filter((s) => s === 'done' || s === 'failed').length,
      stage,
      counts(),
    );

  const run: StudyRun = {
    studyId,
    spec,
    control,
    states,
    report,
    streamDone: () => void streamsDone++,
    judgePaused: false,
  };

  // Outside the try: a run that could not claim its id must not write the end of another's.
  linkViewer(await recordRunStart({ runId: studyId, kind: 'ScalingStudy', spec }));
  try {
    report('loading questions');
    await study.prepareStudy({
      studyId,
      seedPool: spec.questions.seedPool,
      testSet: spec.questions.testSet,
      personas: spec.protocols.includes('persona') ? spec.personas : undefined,
    });
    await sampleStreams(run, streams);
    await watchJudge(run);

    const done = new Set(await study.finishedCells({ studyId }));
    for (const id of done) if (id in states) states[id] = 'done';
    const pending = cells.filter((c) => !done.has(c.cellId));
    report('training and evaluating cells');
    const results = await runCells(run, pending);

    report('fitting and writing the report');
    const written = await study.writeStudyReport({ studyId });
    const failed = results.filter((r) => r === 'failed').length;
    const summary: StudySummary = {
      cells: cells.length,
      trained: results.length - failed,
      alreadyDone: done.size,
      failed,
      reportPath: written.reportPath,
      ...believability(written.standing),
    };
    await recordRunFinish({
      runId: studyId,
      state: 'completed',
      summary: { ...summary, ...written.summary },
    });
    control.progress(streams.length + cells.length, 'done', counts());
    control.setState('completed');
    return summary;
  } catch (error) {
    return endRunOnError(control, studyId, error);
  }
}

/** The summary's judge field, from the report's standing (absent in histories from before it). */
function believability(judge: JudgeStanding | undefined): Pick<StudySummary, 'judge'> {
  if (!judge) return {};
  const { unreliable, controlPassRate, reason, toyLabels } = judge;
  return { judge: { unreliable, controlPassRate, reason, toyLabels } };
}

/** What the phases of one study share: its id, spec, control, the cells' states and its progress. */
interface StudyRun {
  readonly studyId: string;
  readonly spec: ScalingStudySpec;
  readonly control: RunControl;
  readonly states: Record<string, CellState>;
  readonly report: (stage: string) => void;
  /** Counts one more teacher stream sampled. */
  readonly streamDone: () => void;
  /** The study paused itself once for an unreliable judge (whoever resumed it has seen why). */
  judgePaused: boolean;
}

/**
 * Checks the judge's controls so far (after sampling, after each cell): a judge that fails them
 * is named in the run's details in the Temporal UI, as is every toy role; with `onUnreliable:
 * pause` the study also pauses itself once, before its next cell, saying why.
 */
async function watchJudge(run: StudyRun): Promise<void> {
  if (!patched('study-judge-controls')) return;
  const standing = await checkStudyJudge({ studyId: run.studyId });
  for (const role of ['judge', 'teacher', 'student']) {
    const label = standing.toyLabels.find((l) => l.startsWith(`${role}:`));
    run.control.warn(`toy-${role}`, label && `Toy figures. ${label}`);
  }
  run.control.warn('judge', standing.reason ?? undefined);
  if (!standing.reason) return;
  if (run.spec.judgeControls.onUnreliable === 'pause' && !run.judgePaused) {
    run.judgePaused = true;
    await run.control.pauseFor(`${standing.reason}; resume to go on regardless`);
  }
}

/** Samples every teacher stream at once, one StudySampling child each (RS also derives repair/embedding). */
async function sampleStreams(run: StudyRun, streams: ReturnType<typeof studyStreams>): Promise<void> {
  const { studyId, spec, control, report } = run;
  const derive: Derivation[] = [];
  if (spec.protocols.some((p) => p === 'trace-repair' || p === 'trace-repair-revised-only'))
    derive.push('repair');
  if (spec.protocols.includes('embedding-selection')) derive.push('embedding');
  const sampling = `sampling the teacher (per-question progress: query status on ${studyId}-sample-<stream>)`;
  report(sampling);
  await Promise.all(
    streams.map(async (stream) => {
      await control.untilResumed();
      await executeChild(StudySampling, {
        workflowId: `${studyId}-sample-${stream.name}`,
        args: [{ studyId, stream, derive: stream.name === 'rs' ? derive : [], spec }],
      });
      run.streamDone();
      report(sampling);
    }),
  );
}

/** Trains and evaluates the pending cells, `spec.concurrency` StudyCell children at a time; a failed cell is counted, not fatal. */
function runCells(run: StudyRun, pending: readonly Cell[]): Promise<(CellResult | 'failed')[]> {
  const { studyId, spec, control, states, report } = run;
  return mapBounded(pending, spec.concurrency, async (cell: Cell): Promise<CellResult | 'failed'> => {
    await control.untilResumed();
    states[cell.cellId] = 'running';
    report('training and evaluating cells');
    let result: CellResult;
    try {
      result = await executeChild(StudyCell, {
        workflowId: `${studyId}-cell-${cell.cellId}`,
        args: [{ studyId, cell, spec }],
      });
      states[cell.cellId] = 'done';
    } catch (error) {
      if (isCancellation(error)) throw error;
      states[cell.cellId] = 'failed'; // recorded in the child's history; the report lists it
      return 'failed';
    } finally {
      report('training and evaluating cells');
    }
    await watchJudge(run);
    return result;
  });
}
