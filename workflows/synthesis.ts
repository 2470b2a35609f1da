import {
  CancellationScope,
  ParentClosePolicy,
  condition,
  isCancellation,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.js';
import type { SynthesisActivities } from '../activities/synthesis/index.js';
import type { ReasoningProblemResult } from '../schemas/reasoning-synthesis.js';
import type { TaskStage } from '../schemas/synthesis-records.js';
import type { SynthesisSpec } from '../schemas/synthesis-spec.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { continueRun, linkViewer, RunControl } from './run-control.js';
import { validateSpec } from './spec-guard.js';
import { taskStageQuery } from './synthesis-controls.js';
import { SynthesisTask, taskIdOf, type SynthesisTaskResult } from './synthesis-task.js';
import { endRunOnError } from './run-end.js';
import { innermostFailure, MAX_FAILURE_CHARS } from './failure.js';

const { recordRunStart } = proxyActivities<RunActivities>(SHORT_ACTIVITY);
const { recordReasoningProblemFailure } = proxyActivities<SynthesisActivities>(SHORT_ACTIVITY);
const { loadSynthesisPersonas, loadReasoningSeeds, synthesizeReasoningProblem, finishSynthesis } =
  proxyActivities<SynthesisActivities>(LONG_ACTIVITY);

/** What a dataset run carries across continue-as-new (small: one character per task). */
export interface SynthesisProgress {
  /** Personas loaded (tasks to run). */
  readonly total: number;
  /** Next task index to start. */
  readonly cursor: number;
  /** One character per task, by index: k kept, r rejected, f failed, . not finished. */
  readonly outcomes: string;
  readonly tally: { readonly kept: number; readonly rejected: number; readonly failed: number };
  readonly rejectedByReason: Record<string, number>;
  /** A pause in effect when the previous run continued as new stays in effect. */
  readonly paused: boolean;
  /**
   * Indices below it are tool-use tasks, the rest reasoning problems (index - toolTasks); absent
   * (runs from before the reasoning section): all are tool-use tasks.
   */
  readonly toolTasks?: number;
}

/** What a finished dataset run returns (the statistics and files are in PostgreSQL and on disk). */
export interface SynthesisSummary {
  readonly tasks: number;
  readonly kept: number;
  readonly rejected: number;
  readonly failed: number;
  readonly rejectedByReason: Record<string, number>;
  readonly datasetDirectory: string;
}

const OUTCOME_STAGE: Record<string, TaskStage | 'failed'> = { k: 'kept', r: 'rejected', f: 'failed' };

/** What a workflow run of a dataset run changes as tasks start and settle; the task-stage query reads it. */
interface SynthesisState {
  /** Next task index to start. */
  cursor: number;
  /** One character per task, as SynthesisProgress.outcomes. */
  readonly outcomes: string[];
  readonly tally: { kept: number; rejected: number; failed: number };
  readonly rejectedByReason: Record<string, number>;
  /** The stage of each task started and not settled, by index. */
  readonly inFlight: Map<number, TaskStage>;
}

/**
 * A synthesis dataset run: loads the personas (and the reasoning seed problems of a spec with a
 * reasoning section), runs one task workflow per persona and one activity per reasoning problem
 * (seed §3.4) with bounded concurrency, honours pause/resume/cancel, answers per-stage counts and any task's stage, and
 * writes the statistics report and the exported dataset at the end.
 */
export async function Synthesis(input: unknown, carried?: SynthesisProgress): Promise<SynthesisSummary> {
  const spec: SynthesisSpec = await validateSpec('Synthesis', input);
  const runId = workflowInfo().workflowId;
  const control = new RunControl('Synthesis', spec.tasks);

  const progress = carried ? carried : await startRun(spec, runId, control);
  if (progress.paused) control.pause();
  const state: SynthesisState = {
    cursor: progress.cursor,
    outcomes: [...progress.outcomes],
    tally: { ...progress.tally },
    rejectedByReason: { ...progress.rejectedByReason },
    inFlight: new Map<number, TaskStage>(),
  };
  const { outcomes, tally, inFlight } = state;
  const counts = () => stageCounts(progress, state);
  const report = (stage: string) =>
    control.progress(tally.kept + tally.rejected + tally.failed, stage, counts());

  setHandler(
    taskStageQuery,
    (idx) => {
      if (idx < 0 || idx >= progress.total)
        throw new RangeError(`task index ${idx} is outside 0..${progress.total - 1}`);
      const outcome = outcomes[idx];
      if (outcome && outcome !== '.') return OUTCOME_STAGE[outcome]!;
      return inFlight.get(idx) ?? 'pending';
    },
    { description: taskStageQuery.description },
  );

  const toolTasks = progress.toolTasks ?? progress.total;
  const settle = (idx: number, result: SynthesisTaskResult | ReasoningProblemResult | 'failed') => {
    settleTask(state, idx, result);
    report('synthesizing');
  };

  try {
    let startedHere = 0;
    report('synthesizing');
    while (state.cursor < progress.total) {
      if (startedHere >= spec.tasksPerWorkflowRun || workflowInfo().continueAsNewSuggested) break;
      await control.untilResumed();
      if (inFlight.size >= spec.concurrency) {
        await condition(() => inFlight.size < spec.concurrency);
        continue;
      }
      const idx = state.cursor++;
      startedHere++;
      inFlight.set(idx, 'started');
      report('synthesizing'); // the status query counts this task as started, not pending
      if (idx >= toolTasks) {
        startReasoningProblem(spec, runId, idx, toolTasks, settle);
        continue;
      }
      const child = await startChild(SynthesisTask, {
        workflowId: taskIdOf(runId, idx),
        args: [{ runId, idx, spec: taskSpecOf(spec) }],
        // Children are drained before continue-as-new; on cancel they are asked to stop.
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      });
      child.result().then(
        (result) => settle(idx, result),
        (error) => {
          if (!isCancellation(error)) settle(idx, 'failed');
        },
      );
    }
    await condition(() => inFlight.size === 0);
  } catch (error) {
    return endRunOnError(control, runId, error);
  }
  return finishRun(spec, runId, control, progress, state, report, counts);
}

/** A run's first start (not a continuation): records it, loads its personas and reasoning seed problems. */
async function startRun(spec: SynthesisSpec, runId: string, control: RunControl): Promise<SynthesisProgress> {
  linkViewer(await recordRunStart({ runId, kind: 'Synthesis', spec }));
  control.progress(0, 'loading personas');
  const reasoning = spec.reasoning;
  const loaded = await loadSynthesisPersonas({
    runId,
    path: spec.personas.path,
    offset: spec.personas.offset,
    // Reasoning problems take the personas in turn: load as many as there are problems.
    limit: reasoning ? Math.max(spec.tasks, reasoning.problems) : spec.tasks,
  });
  const toolTasks = Math.min(loaded.loaded, spec.tasks);
  let problems = 0;
  if (reasoning) {
    control.progress(0, 'loading reasoning seed problems');
    problems = (
      await loadReasoningSeeds({
        runId,
        path: reasoning.seeds.path,
        offset: reasoning.seeds.offset,
        limit: reasoning.problems,
      })
    ).loaded;
  }
  return {
    total: toolTasks + problems,
    cursor: 0,
    outcomes: '.'.repeat(toolTasks + problems),
    tally: { kept: 0, rejected: 0, failed: 0 },
    rejectedByReason: {},
    paused: false,
    ...(reasoning && { toolTasks }),
  };
}

/** The status query's counts: tasks pending, settled by outcome, and in flight by stage. */
function stageCounts(progress: SynthesisProgress, state: SynthesisState): Record<string, number> {
  const byStage: Record<string, number> = { pending: progress.total - state.cursor, ...state.tally };
  for (const stage of state.inFlight.values()) byStage[stage] = (byStage[stage] ?? 0) + 1;
  return byStage;
}

/** Counts a task's outcome (and a rejection's reason) and marks it no longer in flight. */
function settleTask(
  state: SynthesisState,
  idx: number,
  result: SynthesisTaskResult | ReasoningProblemResult | 'failed',
): void {
  const outcome = result === 'failed' ? 'failed' : result.outcome;
  state.tally[outcome]++;
  if (result !== 'failed' && result.outcome === 'rejected') {
    state.rejectedByReason[result.reason] = (state.rejectedByReason[result.reason] ?? 0) + 1;
  }
  const mark = outcome === 'failed' ? 'f' : outcome === 'kept' ? 'k' : 'r';
  state.outcomes[idx] = mark;
  state.inFlight.delete(idx);
}

/**
 * Starts a reasoning problem: one activity, idempotent on its row (seed §3.4), settled when it
 * ends; a failure is recorded on the row before the run counts it (as a task's row does).
 */
function startReasoningProblem(
  spec: SynthesisSpec,
  runId: string,
  idx: number,
  toolTasks: number,
  settle: (idx: number, result: ReasoningProblemResult | 'failed') => void,
): void {
  synthesizeReasoningProblem({
    runId,
    idx: idx - toolTasks,
    solutions: spec.reasoning!.solutions,
    rewrite: spec.reasoning!.rewrite,
    keep: spec.reasoning!.keep,
    teacher: spec.models.teacher,
    templates: spec.templates,
    seed: spec.seed + idx,
  }).then(
    (result) => settle(idx, result),
    async (error) => {
      if (isCancellation(error)) return;
      // The row records the failure before the run counts it (as a task's row does).
      const failure = innermostFailure(error);
      await CancellationScope.nonCancellable(() =>
        recordReasoningProblemFailure({
          runId,
          idx: idx - toolTasks,
          reason: failure.type,
          detail: failure.message.slice(0, MAX_FAILURE_CHARS),
        }),
      ).catch(() => undefined);
      settle(idx, 'failed');
    },
  );
}

/** The part of the spec a SynthesisTask child gets, in this order. */
const TASK_SPEC_KEYS = [
  'models',
  'refine',
  'demonstrationsPerTask',
  'maxTurns',
  'demonstrationToolChoice',
  'coverageThreshold',
  'seed',
  'templates',
  'world',
  'taskSize',
] as const satisfies readonly (keyof SynthesisSpec)[];

function taskSpecOf(spec: SynthesisSpec): Pick<SynthesisSpec, (typeof TASK_SPEC_KEYS)[number]> {
  return Object.fromEntries(TASK_SPEC_KEYS.map((key) => [key, spec[key]])) as Pick<
    SynthesisSpec,
    (typeof TASK_SPEC_KEYS)[number]
  >;
}

/** Continues as new while tasks remain; otherwise writes the report and the dataset and completes. */
async function finishRun(
  spec: SynthesisSpec,
  runId: string,
  control: RunControl,
  progress: SynthesisProgress,
  state: SynthesisState,
  report: (stage: string) => void,
  counts: () => Record<string, number>,
): Promise<SynthesisSummary> {
  const { cursor, outcomes, tally, rejectedByReason } = state;
  if (cursor < progress.total) {
    await continueRun<typeof Synthesis>(spec, {
      total: progress.total,
      cursor,
      outcomes: outcomes.join(''),
      tally,
      rejectedByReason,
      paused: control.isPaused,
      ...(progress.toolTasks !== undefined && { toolTasks: progress.toolTasks }),
    });
  }

  report('writing the report and the dataset');
  const written = await finishSynthesis({ runId });
  const summary: SynthesisSummary = {
    tasks: progress.total,
    ...tally,
    rejectedByReason,
    datasetDirectory: written.directory,
  };
  control.progress(progress.total, 'done', counts());
  control.setState('completed');
  return summary;
}
