import { executeChild, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import type { RunActivities } from '../activities/runs.js';
import type { IterationPlan } from '../activities/training/plan.js';
import type { GrpoSpec } from '../schemas/grpo-spec.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { mapBounded } from './bounded.js';
import { iterationTasksQuery, latestMetricsQuery, stopSignal } from './grpo-controls.js';
import { benchmarksDue, checkBenchmarkTasks, evaluateBenchmarks } from './grpo-benchmarks.js';
import { GrpoGroup } from './grpo-group.js';
import { planInput } from './grpo-plan.js';
import { trackingConfig } from './grpo-tracking.js';
import { continueRun, linkViewer, RunControl } from './run-control.js';
import { validateSpec } from './spec-guard.js';
import { trainerActivities } from './trainer.js';
import { groupPolicy, syncServedPolicy } from './policy-serving.js';
import { endRunOnError } from './run-end.js';
import { judgeStanding, type JudgeStanding } from '../schemas/judge-controls.js';
import { watchJudge } from './judge-watch.js';

const { recordRunStart, recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);
const activities = proxyActivities<MockworldActivities>(LONG_ACTIVITY);

/** History events a run may reach before it continues as new (the server's limit is far above). */
const HISTORY_BUDGET = 8_000;

/**
 * Iterations per workflow run before continue-as-new: an iteration adds ~7 events per task (one
 * child workflow each) and ~30 more here (bench/grpo.ts: 720-900 events at globalBatch 128).
 */
function iterationsPerRun(globalBatch: number): number {
  return Math.max(1, Math.min(50, Math.floor(HISTORY_BUDGET / (7 * globalBatch + 30))));
}

/** What a training run carries across continue-as-new. */
export interface GrpoProgress {
  readonly iteration: number;
  readonly totalIterations: number;
  /** Optimizer steps applied; the policy version is `step-<policyStep>`. */
  readonly policyStep: number;
  readonly paused: boolean;
  readonly latestMetrics: Record<string, unknown>;
  /** The run paused itself once for an unreliable judge (absent in runs from before controls). */
  readonly judgePaused?: boolean;
}

/** What a finished (or stopped) training run returns. */
export interface GrpoSummary {
  readonly iterations: number;
  readonly policyStep: number;
  readonly stopped: boolean;
  readonly latestMetrics: Record<string, unknown>;
}

/** The replicas' policy after a sync (policy.serving), which each group's rollouts are spread over. */
type ServedPolicy = Awaited<ReturnType<typeof syncServedPolicy>>;

/** What one workflow run of a training run changes as it goes; its query handlers read it. */
interface GrpoRunState {
  iteration: number;
  policyStep: number;
  latestMetrics: Record<string, unknown>;
  stopping: boolean;
  taskStatus: Record<string, string>;
  /** With policy.serving, what the replicas serve (synced before the first rollouts and after each step). */
  served: ServedPolicy | undefined;
  judgePaused: boolean;
}

/** What the helpers of one workflow run share: its spec, ids, trainer, control and state. */
interface GrpoRun {
  readonly spec: GrpoSpec;
  readonly runId: string;
  readonly trainer: ReturnType<typeof trainerActivities>;
  readonly control: RunControl;
  readonly totalIterations: number;
  readonly groupSpec: ReturnType<typeof groupSpecOf>;
  readonly state: GrpoRunState;
}

/**
 * GRPO in the mock world (seed 000 §3.2–3.4, App. A). Each iteration: a deterministic batch of
 * tasks, a group of n judged rollouts per task from the current policy, one trainer step on the
 * GPU queue (mini-batches of `miniBatch` tasks inside it), metrics. The policy server picks up the
 * new weights, and the next iteration's rollouts are tagged with the new policy version. Pause
 * takes effect between iterations; `stop` finishes the iteration, pins the checkpoint, completes.
 */
export async function GrpoTraining(input: unknown, carried?: GrpoProgress): Promise<GrpoSummary> {
  const spec: GrpoSpec = await validateSpec('GrpoTraining', input);
  const runId = workflowInfo().workflowId;
  const trainer = trainerActivities(spec.gpuTaskQueue);

  const progress = carried ? carried : await startRun(spec, runId, trainer);
  const control = new RunControl('GrpoTraining', progress.totalIterations);
  if (progress.paused) control.pause();
  const { iteration, policyStep, latestMetrics } = progress;
  const state: GrpoRunState = {
    iteration,
    policyStep,
    latestMetrics,
    stopping: false,
    taskStatus: {},
    served: undefined,
    judgePaused: progress.judgePaused ?? false,
  };
  // With policy.serving, the replicas are synced (and checked) before this run's first rollouts:
  // after continue-as-new or a restart they may serve an older step than the one the run is at.
  if (spec.policy.serving) state.served = await syncServedAtStart(spec, runId, trainer);
  setHandler(stopSignal, () => void (state.stopping = true), { description: stopSignal.description });
  setHandler(latestMetricsQuery, () => state.latestMetrics, {
    description: latestMetricsQuery.description,
  });
  setHandler(iterationTasksQuery, () => state.taskStatus, { description: iterationTasksQuery.description });

  const totalIterations = progress.totalIterations;
  const run: GrpoRun = {
    spec,
    runId,
    trainer,
    control,
    totalIterations,
    groupSpec: groupSpecOf(spec),
    state,
  };
  try {
    await trainIterations(run);
  } catch (error) {
    return endRunOnError(control, runId, error);
  }
  return finishRun(run);
}

/** A run's first start (not a continuation): checks, records it, registers its base, plans its length. */
async function startRun(
  spec: GrpoSpec,
  runId: string,
  trainer: ReturnType<typeof trainerActivities>,
): Promise<GrpoProgress> {
  // A benchmark task the evaluation worker does not know fails the run before it is recorded.
  if (spec.benchmarks) await checkBenchmarkTasks(spec.benchmarks, runId);
  linkViewer(await recordRunStart({ runId, kind: 'GrpoTraining', spec }));
  // Record the policy's base with the trainer before any step, so the policy server serves
  // iteration 0 from spec.policy.base (not from its own --base).
  await trainer['trainer.registerRun']({ run_id: runId, model: spec.policy.base });
  const first = await activities.planIteration(planInput(spec, runId, 0));
  return {
    iteration: 0,
    totalIterations: first.iterationsPerEpoch * spec.epochs,
    policyStep: 0,
    paused: false,
    latestMetrics: {},
  };
}

/** Syncs the replicas to the trainer's latest policy before this workflow run's first rollouts. */
async function syncServedAtStart(
  spec: GrpoSpec,
  runId: string,
  trainer: ReturnType<typeof trainerActivities>,
): Promise<ServedPolicy> {
  const latest = await trainer['trainer.latestPolicy']({ run_id: runId });
  return syncServedPolicy(runId, spec.policy, latest.step, {
    modelPath: latest.model_path,
    adapterPath: latest.adapter_path,
  });
}

/** The part of the spec every GrpoGroup child gets (its policy replaced per replica when served). */
function groupSpecOf(spec: GrpoSpec) {
  return {
    policy: spec.policy,
    judge: spec.judge,
    toolSimulator: spec.toolSimulator,
    userSimulator: spec.userSimulator,
    maxTurns: spec.maxTurns,
    maxResponseTokens: spec.maxResponseTokens,
    templates: spec.templates,
    world: spec.world,
    // Only when set: the children of histories from before the setting keep their input.
    ...(spec.rolloutToolChoice.length > 0 ? { rolloutToolChoice: spec.rolloutToolChoice } : {}),
    ...(spec.dataset.reasoning
      ? { reasoning: { search: spec.dataset.reasoning.search, sandbox: spec.dataset.reasoning.sandbox } }
      : {}),
  };
}

/** A child's kind: reasoning problems of the mix get the real tools and correctness rewards. */
const kindOf = (plan: { reasoningIds?: string[] }, taskId: string) =>
  plan.reasoningIds?.includes(taskId) ? { kind: 'reasoning' as const } : {};

/** The input of one GrpoGroup child (the `index`-th of its batch picks its replica when served). */
function groupInput(
  run: GrpoRun,
  plan: IterationPlan,
  taskId: string,
  index: number,
  group: { policyVersion: string; purpose: 'rollout' | 'evaluation'; rollouts: number },
) {
  const { spec, runId, groupSpec, state } = run;
  return {
    runId,
    iteration: state.iteration,
    taskId,
    policyVersion: group.policyVersion,
    purpose: group.purpose,
    rollouts: group.rollouts,
    ...kindOf(plan, taskId),
    spec: state.served ? { ...groupSpec, policy: groupPolicy(spec.policy, state.served, index) } : groupSpec,
  };
}

/** The iterations, continuing as new when this workflow run's history budget is spent; then the checkpoint. */
async function trainIterations(run: GrpoRun): Promise<void> {
  const { spec, control, state } = run;
  for (let here = 0; state.iteration < run.totalIterations; here++) {
    if (here >= iterationsPerRun(spec.globalBatch) || workflowInfo().continueAsNewSuggested) {
      await continueRun<typeof GrpoTraining>(spec, {
        iteration: state.iteration,
        totalIterations: run.totalIterations,
        policyStep: state.policyStep,
        paused: control.isPaused,
        latestMetrics: state.latestMetrics,
        ...(state.judgePaused ? { judgePaused: true } : {}),
      });
    }
    await control.untilResumed(); // the safe point: between iterations
    if (state.stopping) break;
    await runIteration(run);
  }
  if (state.policyStep > 0)
    await run.trainer['trainer.saveCheckpoint']({ run_id: run.runId, step: state.policyStep });
}

/** One iteration: plan, rollouts, trainer step, metrics (recorded and tracked); then the next. */
async function runIteration(run: GrpoRun): Promise<void> {
  const { spec, runId, control, state } = run;
  const iteration = state.iteration;
  control.progress(iteration, `iteration ${iteration + 1}: rollouts`);
  const plan = await activities.planIteration(planInput(spec, runId, iteration));
  const groups = await rollOut(run, plan, `step-${state.policyStep}`);

  control.progress(iteration, `iteration ${iteration + 1}: trainer step`);
  const stepResult = await trainerStep(run);
  const rolloutsJudged = groups.reduce((sum, group) => sum + group, 0);
  state.latestMetrics = await iterationMetrics(run, plan, stepResult, rolloutsJudged);
  await activities.recordIterationMetrics({
    runId,
    iteration,
    policyVersion: `step-${state.policyStep}`,
    metrics: state.latestMetrics,
  });
  // The same metrics to the trainer's experiment trackers (TensorBoard, W&B, MLflow), at the step.
  await run.trainer['trainer.trackIteration']({
    run_id: runId,
    step: state.policyStep,
    metrics: state.latestMetrics,
    config: trackingConfig(spec),
  });
  const standing = state.latestMetrics.judge as JudgeStanding | undefined;
  state.judgePaused = await watchJudge(control, standing, spec.judgeControls, state.judgePaused);
  state.iteration++;
  control.progress(state.iteration, `iteration ${state.iteration} done`);
}

/** The iteration's groups of judged rollouts, one GrpoGroup child per task; the query shows each task's status. */
async function rollOut(run: GrpoRun, plan: IterationPlan, policyVersion: string) {
  const { spec, runId, state } = run;
  const iteration = state.iteration;
  const taskStatus = (state.taskStatus = Object.fromEntries(plan.taskIds.map((id) => [id, 'queued'])));
  return mapBounded(plan.taskIds, spec.rolloutConcurrency, async (taskId, index) => {
    taskStatus[taskId] = 'rolling out';
    const judged = await executeChild(GrpoGroup, {
      workflowId: `${runId}-it${iteration}-${taskId}`,
      args: [
        groupInput(run, plan, taskId, index, {
          policyVersion,
          purpose: 'rollout',
          rollouts: spec.rolloutsPerTask,
        }),
      ],
    });
    taskStatus[taskId] = 'judged';
    return judged;
  });
}

/** The iteration's batch, one trainer step on it, and (with policy.serving) the replicas synced to it. */
async function trainerStep(run: GrpoRun) {
  const { spec, runId, trainer, state } = run;
  const step = state.policyStep + 1;
  const batch = await activities.buildIterationBatch({
    runId,
    step,
    iteration: state.iteration,
    truncation: spec.truncation,
    maxUnjudgedFraction: spec.maxUnjudgedFraction,
  });
  const trained = await trainer['trainer.grpoStep']({
    run_id: runId,
    step,
    batch_ref: { kind: 'postgres', run_id: runId, step },
    model: spec.policy.base,
    config: {
      lr: spec.learningRate,
      eps_low: spec.clipLow,
      eps_high: spec.clipHigh,
      mini_batch_groups: spec.miniBatch,
      ...(spec.packTokens > 0 ? { pack_tokens: spec.packTokens } : {}),
      // pi_old is the distribution the rollouts were sampled from, not the plain softmax.
      temperature: spec.policy.sampling.temperature,
      top_p: spec.policy.sampling.topP,
    },
  });
  state.policyStep = trained.step;
  if (spec.policy.serving) {
    // Every replica serves the new step, checked, before evaluation or the next rollouts.
    state.served = await syncServedPolicy(runId, spec.policy, state.policyStep, {
      modelPath: trained.model_path,
      adapterPath: trained.adapter_path,
    });
  }
  return { batch, trained };
}

/** The iteration's metrics: rollout summary, held-out evaluation and benchmarks when due, batch and trainer. */
async function iterationMetrics(
  run: GrpoRun,
  plan: IterationPlan,
  { batch, trained }: Awaited<ReturnType<typeof trainerStep>>,
  rolloutsJudged: number,
): Promise<Record<string, unknown>> {
  const { spec, runId, control, state } = run;
  const { iteration, policyStep } = state;
  const rollouts = await activities.summarizeRollouts({ runId, iteration });
  const evaluation =
    spec.evaluateEvery > 0 && (iteration + 1) % spec.evaluateEvery === 0
      ? await evaluateHeldOut(run, plan, `step-${policyStep}`)
      : undefined;
  // tau2 / BFCL on this step's checkpoint: a child Evaluation run, waited on (grpo-benchmarks.ts).
  let benchmarks = undefined as Awaited<ReturnType<typeof evaluateBenchmarks>> | undefined;
  if (benchmarksDue(spec.benchmarks, iteration, run.totalIterations, state.stopping)) {
    control.progress(iteration, `iteration ${iteration + 1}: benchmarks of step-${policyStep}`);
    benchmarks = await evaluateBenchmarks(spec.benchmarks, runId, policyStep);
  }
  // Absent when no judge control was graded (reasoning problems only, histories from before them).
  const judge = judgeStanding(rollouts.judgeControls?.run, spec.judgeControls.minPassRate, 'rewards');
  return {
    iteration,
    policyVersion: `step-${policyStep}`,
    ...rollouts,
    rolloutsJudged,
    ...(judge ? { judge } : {}),
    ...(evaluation ? { evaluation } : {}),
    ...(benchmarks ? { benchmarks } : {}),
    zeroVarianceGroups: batch.zeroVarianceGroups,
    // Judged rollouts not trained on, by why (absent in histories from before it was reported).
    ...(batch.leftOut ? { leftOut: batch.leftOut } : {}),
    trainer: trained.metrics,
  };
}

/** One judged episode per held-out task from the policy just trained (never trained on). */
async function evaluateHeldOut(run: GrpoRun, plan: IterationPlan, policyVersion: string) {
  const { spec, runId, control, state } = run;
  const iteration = state.iteration;
  control.progress(iteration, `iteration ${iteration + 1}: held-out evaluation`);
  await mapBounded(plan.heldOutTaskIds, spec.rolloutConcurrency, (taskId, index) =>
    executeChild(GrpoGroup, {
      workflowId: `${runId}-eval${iteration}-${taskId}`,
      args: [groupInput(run, plan, taskId, index, { policyVersion, purpose: 'evaluation', rollouts: 1 })],
    }),
  );
  return activities.summarizeRollouts({ runId, iteration, purpose: 'evaluation' });
}

/** Marks the run completed and records its summary. */
async function finishRun({ runId, control, state }: GrpoRun): Promise<GrpoSummary> {
  const { iteration, policyStep, stopping, latestMetrics } = state;
  const summary: GrpoSummary = { iterations: iteration, policyStep, stopped: stopping, latestMetrics };
  control.setState('completed');
  await recordRunFinish({ runId, state: 'completed', summary: { ...summary } });
  return summary;
}
