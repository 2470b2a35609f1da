import { proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import type { RunActivities } from '../activities/runs.js';
import { sftLearningRate } from '../activities/study/grid.js';
import type { SftDataset } from '../activities/training/sft-dataset.js';
import type { SftSpec } from '../schemas/sft-spec.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { latestMetricsQuery, stopSignal } from './grpo-controls.js';
import { continueRun, linkViewer, RunControl } from './run-control.js';
import { endRunOnError } from './run-end.js';
import { validateSpec } from './spec-guard.js';
import { trainerActivities } from './trainer.js';

const { recordRunStart, recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);
const activities = proxyActivities<MockworldActivities>(LONG_ACTIVITY);

/**
 * Optimizer steps per workflow run before continue-as-new: a step adds ~17 events (two activities,
 * their workflow tasks, a progress upsert; test/histories/sft-training-paused-resumed.json), so a
 * run stays near GrpoTraining's 8,000-event budget.
 */
const STEPS_PER_RUN = 500;

/** What an SFT run carries across continue-as-new: its data set is built, `applied` steps are done. */
export interface SftProgress {
  readonly dataset: SftDataset;
  readonly applied: number;
  readonly paused: boolean;
  /** The batch loss of step 1 (before any update), kept for the summary. */
  readonly firstLoss: number | null;
  readonly latestMetrics: Record<string, unknown>;
}

/** What a finished (or stopped) SFT run returns. */
export interface SftSummary {
  readonly dataset: SftDataset;
  readonly steps: number;
  readonly stopped: boolean;
  /** Token-mean NLL of the assistant tokens of step 1's batch, before its update. */
  readonly firstLoss: number | null;
  /** The same of the last step's batch, before its update. */
  readonly lastLoss: number | null;
  readonly latestMetrics: Record<string, unknown>;
}

/**
 * Supervised fine-tuning on the teacher's kept demonstrations of a synthesis run (seed 000 App. B,
 * the SFT side of RL against SFT at equal data size). The data set is built once (one trainer
 * batch per step in PostgreSQL), then one `trainer.sftStep` per step on the GPU queue, each
 * exactly once (the trainer is idempotent by run and step), with only assistant tokens carrying
 * loss. Each step's loss is recorded as GrpoTraining records an iteration's metrics. Pause takes
 * effect between steps; `stop` finishes the step, pins its checkpoint and completes.
 */
export async function SftTraining(input: unknown, carried?: SftProgress): Promise<SftSummary> {
  const spec: SftSpec = await validateSpec('SftTraining', input);
  const runId = workflowInfo().workflowId;
  const trainer = trainerActivities(spec.gpuTaskQueue);

  const control = new RunControl('SftTraining', carried?.dataset.steps ?? 0);
  if (carried?.paused) control.pause();
  const state: SftState = { stopping: false, latestMetrics: carried?.latestMetrics ?? {} };
  setHandler(stopSignal, () => void (state.stopping = true), { description: stopSignal.description });
  setHandler(latestMetricsQuery, () => state.latestMetrics, { description: latestMetricsQuery.description });

  let progress: SftProgress;
  try {
    progress = carried ?? (await startRun(spec, runId, control));
  } catch (error) {
    return endRunOnError(control, runId, error);
  }
  const { dataset } = progress;
  let { applied, firstLoss } = progress;
  const counts = { examples: dataset.examples, demonstrations: dataset.demonstrations };
  control.progress(applied, applied ? `step ${applied} done` : 'data set built', counts);

  try {
    for (let here = 0; applied < dataset.steps; here++) {
      if (here >= STEPS_PER_RUN || workflowInfo().continueAsNewSuggested) {
        await continueRun<typeof SftTraining>(spec, {
          dataset,
          applied,
          paused: control.isPaused,
          firstLoss,
          latestMetrics: state.latestMetrics,
        });
      }
      await control.untilResumed(); // the safe point: between steps
      if (state.stopping) break;
      const step = applied + 1;
      control.progress(applied, `step ${step}: trainer step`, counts);
      const trained = await sftStep({ spec, runId, trainer, dataset, state }, step);
      applied = trained.applied;
      if (step === 1) firstLoss = trained.loss;
      control.progress(applied, `step ${applied} done`, counts);
    }
    if (applied > 0) await trainer['trainer.saveCheckpoint']({ run_id: runId, step: applied });
  } catch (error) {
    return endRunOnError(control, runId, error);
  }

  const { latestMetrics } = state;
  const lastLoss = typeof latestMetrics.loss === 'number' ? latestMetrics.loss : null;
  const summary: SftSummary = {
    dataset,
    steps: applied,
    stopped: state.stopping,
    firstLoss,
    lastLoss,
    latestMetrics,
  };
  control.setState('completed');
  await recordRunFinish({ runId, state: 'completed', summary: { ...summary } });
  return summary;
}

/** What SftTraining's signal and query handlers share with its steps. */
interface SftState {
  stopping: boolean;
  latestMetrics: Record<string, unknown>;
}

/**
 * One `trainer.sftStep` on the GPU queue, then its metrics: set for the query before they are
 * recorded (row `iteration` = step - 1, as GrpoTraining's: `mockworld report` and the viewer read
 * them alike). Returns the step the trainer applied and the batch's loss.
 */
async function sftStep(
  run: {
    spec: SftSpec;
    runId: string;
    trainer: ReturnType<typeof trainerActivities>;
    dataset: SftProgress['dataset'];
    state: SftState;
  },
  step: number,
): Promise<{ applied: number; loss: number | null }> {
  const { spec, runId, trainer, dataset, state } = run;
  const lr = sftLearningRate(step, dataset.steps, spec);
  const trained = await trainer['trainer.sftStep']({
    run_id: runId,
    step,
    batch_ref: { kind: 'postgres', run_id: runId, step },
    model: spec.policy.base,
    config: { lr, weight_decay: spec.weightDecay, max_seq_len: spec.maxSeqLen },
  });
  const applied = trained.step;
  const loss = typeof trained.metrics.loss === 'number' ? trained.metrics.loss : null;
  state.latestMetrics = {
    step: applied,
    epoch: Math.floor((step - 1) / Math.ceil(dataset.examples / spec.globalBatch)),
    policyVersion: `step-${applied}`,
    loss,
    lr,
    trainer: trained.metrics,
  };
  await activities.recordIterationMetrics({
    runId,
    iteration: step - 1,
    policyVersion: `step-${applied}`,
    metrics: state.latestMetrics,
  });
  return { applied, loss };
}

/**
 * The first run of the chain: records the run, builds the data set (refusing one the spec does not
 * fit, `dataset.examples` or `dataset.heldOutTasks`, before any step) and registers the run's model
 * with the trainer, so the policy server serves step 0 of it from spec.policy.base.
 */
async function startRun(spec: SftSpec, runId: string, control: RunControl): Promise<SftProgress> {
  linkViewer(await recordRunStart({ runId, kind: 'SftTraining', spec }));
  control.progress(0, 'building the data set');
  const dataset = await activities.buildSftDataset({
    runId,
    synthesisRunId: spec.dataset.synthesisRunId,
    ...(spec.dataset.source === 'reasoning' ? { source: 'reasoning' as const } : {}),
    heldOutTasks: spec.dataset.heldOutTasks,
    examples: spec.dataset.examples,
    epochs: spec.epochs,
    globalBatch: spec.globalBatch,
    seed: spec.seed,
  });
  control.setTotal(dataset.steps);
  await trainerActivities(spec.gpuTaskQueue)['trainer.registerRun']({
    run_id: runId,
    model: spec.policy.base,
  });
  return { dataset, applied: 0, paused: false, firstLoss: null, latestMetrics: {} };
}
