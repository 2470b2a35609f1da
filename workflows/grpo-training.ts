import { executeChild, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import type { RunActivities } from '../activities/runs.js';
import type { IterationPlan, PlanIterationInput } from '../activities/training/plan.js';
import type { GrpoSpec } from '../schemas/grpo-spec.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { mapBounded } from './bounded.js';
import { iterationTasksQuery, latestMetricsQuery, stopSignal } from './grpo-controls.js';
import { benchmarksDue, checkBenchmarkTasks, evaluateBenchmarks } from './grpo-benchmarks.js';
import { GrpoGroup } from './grpo-group.js';
import { trackingConfig } from './grpo-tracking.js';
import { continueRun, linkViewer, RunControl } from './run-control.js';
import { validateSpec } from './spec-guard.js';
import { trainerActivities } from './trainer.js';
import { groupPolicy, syncServedPolicy } from './policy-serving.js';
import { endRunOnError } from './run-end.js';

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
}

/** What a finished (or stopped) training run returns. */
export interface GrpoSummary {
  readonly iterations: number;
  readonly policyStep: number;
  readonly stopped: boolean;
  readonly latestMetrics: Record<string, unknown>;
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

  let progress: GrpoProgress;
  if (carried) progress = carried;
  else {
    // A benchmark task the evaluation worker does not know fails the run before it is recorded.
    if (spec.benchmarks) await checkBenchmarkTasks(spec.benchmarks, runId);
    linkViewer(await recordRunStart({ runId, kind: 'GrpoTraining', spec }));
    // Record the policy's base with the trainer before any step, so the policy server serves
    // iteration 0 from spec.policy.base (not from its own --base).
    await trainer['trainer.registerRun']({ run_id: runId, model: spec.policy.base });
    const first = await activities.planIteration(planInput(spec, runId, 0));
    progress = {
      iteration: 0,
      totalIterations: first.iterationsPerEpoch * spec.epochs,
      policyStep: 0,
      paused: false,
      latestMetrics: {},
    };
  }
  const control = new RunControl('GrpoTraining', progress.totalIterations);
  if (progress.paused) control.pause();
  let { iteration, policyStep, latestMetrics } = progress;
  let stopping = false;
  let taskStatus: Record<string, string> = {};
  // With policy.serving, the replicas are synced (and checked) before this run's first rollouts:
  // after continue-as-new or a restart they may serve an older step than the one the run is at.
  let served = undefined as Awaited<ReturnType<typeof syncServedPolicy>> | undefined;
  if (spec.policy.serving) {
    const latest = await trainer['trainer.latestPolicy']({ run_id: runId });
    served = await syncServedPolicy(runId, spec.policy, latest.step, {
      modelPath: latest.model_path,
      adapterPath: latest.adapter_path,
    });
  }
  setHandler(stopSignal, () => void (stopping = true), { description: stopSignal.description });
  setHandler(latestMetricsQuery, () => latestMetrics, { description: latestMetricsQuery.description });
  setHandler(iterationTasksQuery, () => taskStatus, { description: iterationTasksQuery.description });

  const groupSpec = {
    policy: spec.policy,
    judge: spec.judge,
    toolSimulator: spec.toolSimulator,
    userSimulator: spec.userSimulator,
    maxTurns: spec.maxTurns,
    maxResponseTokens: spec.maxResponseTokens,
    templates: spec.templates,
    world: spec.world,
    ...(spec.dataset.reasoning
      ? { reasoning: { search: spec.dataset.reasoning.search, sandbox: spec.dataset.reasoning.sandbox } }
      : {}),
  };
  /** A child's kind: reasoning problems of the mix get the real tools and correctness rewards. */
  const kindOf = (plan: { reasoningIds?: string[] }, taskId: string) =>
    plan.reasoningIds?.includes(taskId) ? { kind: 'reasoning' as const } : {};

  /** One judged episode per held-out task from the policy just trained (never trained on). */
  const evaluateHeldOut = async (plan: IterationPlan, policyVersion: string) => {
    control.progress(iteration, `iteration ${iteration + 1}: held-out evaluation`);
    await mapBounded(plan.heldOutTaskIds, spec.rolloutConcurrency, (taskId, index) =>
      executeChild(GrpoGroup, {
        workflowId: `${runId}-eval${iteration}-${taskId}`,
        args: [
          {
            runId,
            iteration,
            taskId,
            policyVersion,
            purpose: 'evaluation',
            rollouts: 1,
            ...kindOf(plan, taskId),
            spec: served ? { ...groupSpec, policy: groupPolicy(spec.policy, served, index) } : groupSpec,
          },
        ],
      }),
    );
    return activities.summarizeRollouts({ runId, iteration, purpose: 'evaluation' });
  };

  try {
    for (let here = 0; iteration < progress.totalIterations; here++) {
      if (here >= iterationsPerRun(spec.globalBatch) || workflowInfo().continueAsNewSuggested) {
        await continueRun<typeof GrpoTraining>(spec, {
          iteration,
          totalIterations: progress.totalIterations,
          policyStep,
          paused: control.isPaused,
          latestMetrics,
        });
      }
      await control.untilResumed(); // the safe point: between iterations
      if (stopping) break;
      control.progress(iteration, `iteration ${iteration + 1}: rollouts`);
      const plan = await activities.planIteration(planInput(spec, runId, iteration));
      const policyVersion = `step-${policyStep}`;
      taskStatus = Object.fromEntries(plan.taskIds.map((id) => [id, 'queued']));
      const groups = await mapBounded(plan.taskIds, spec.rolloutConcurrency, async (taskId, index) => {
        taskStatus[taskId] = 'rolling out';
        const judged = await executeChild(GrpoGroup, {
          workflowId: `${runId}-it${iteration}-${taskId}`,
          args: [
            {
              runId,
              iteration,
              taskId,
              policyVersion,
              purpose: 'rollout',
              rollouts: spec.rolloutsPerTask,
              ...kindOf(plan, taskId),
              spec: served ? { ...groupSpec, policy: groupPolicy(spec.policy, served, index) } : groupSpec,
            },
          ],
        });
        taskStatus[taskId] = 'judged';
        return judged;
      });

      control.progress(iteration, `iteration ${iteration + 1}: trainer step`);
      const step = policyStep + 1;
      const batch = await activities.buildIterationBatch({
        runId,
        step,
        iteration,
        truncation: spec.truncation,
        maxUnjudgedFraction: spec.maxUnjudgedFraction,
      });
      const rolloutsJudged = groups.reduce((sum, group) => sum + group, 0);
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
      policyStep = trained.step;
      if (spec.policy.serving) {
        // Every replica serves the new step, checked, before evaluation or the next rollouts.
        served = await syncServedPolicy(runId, spec.policy, policyStep, {
          modelPath: trained.model_path,
          adapterPath: trained.adapter_path,
        });
      }

      const rollouts = await activities.summarizeRollouts({ runId, iteration });
      const evaluation =
        spec.evaluateEvery > 0 && (iteration + 1) % spec.evaluateEvery === 0
          ? await evaluateHeldOut(plan, `step-${policyStep}`)
          : undefined;
      // tau2 / BFCL on this step's checkpoint: a child Evaluation run, waited on (grpo-benchmarks.ts).
      let benchmarks = undefined as Awaited<ReturnType<typeof evaluateBenchmarks>> | undefined;
      if (benchmarksDue(spec.benchmarks, iteration, progress.totalIterations, stopping)) {
        control.progress(iteration, `iteration ${iteration + 1}: benchmarks of step-${policyStep}`);
        benchmarks = await evaluateBenchmarks(spec.benchmarks, runId, policyStep);
      }
      latestMetrics = {
        iteration,
        policyVersion: `step-${policyStep}`,
        ...rollouts,
        rolloutsJudged,
        ...(evaluation ? { evaluation } : {}),
        ...(benchmarks ? { benchmarks } : {}),
        zeroVarianceGroups: batch.zeroVarianceGroups,
        // Judged rollouts not trained on, by why (absent in histories from before it was reported).
        ...(batch.leftOut ? { leftOut: batch.leftOut } : {}),
        trainer: trained.metrics,
      };
      await activities.recordIterationMetrics({
        runId,
        iteration,
        policyVersion: `step-${policyStep}`,
        metrics: latestMetrics,
      });
      // The same metrics to the trainer's experiment trackers (TensorBoard, W&B, MLflow), at the step.
      await trainer['trainer.trackIteration']({
        run_id: runId,
        step: policyStep,
        metrics: latestMetrics,
        config: trackingConfig(spec),
      });
      iteration++;
      control.progress(iteration, `iteration ${iteration} done`);
    }
    if (policyStep > 0) await trainer['trainer.saveCheckpoint']({ run_id: runId, step: policyStep });
  } catch (error) {
    return endRunOnError(control, runId, error);
  }

  const summary: GrpoSummary = { iterations: iteration, policyStep, stopped: stopping, latestMetrics };
  control.setState('completed');
  await recordRunFinish({ runId, state: 'completed', summary: { ...summary } });
  return summary;
}

function planInput(spec: GrpoSpec, runId: string, iteration: number): PlanIterationInput {
  const { synthesisRunId, heldOutTasks, toolUseTasks, reasoning } = spec.dataset;
  return {
    runId,
    synthesisRunId,
    heldOutTasks,
    globalBatch: spec.globalBatch,
    seed: spec.seed,
    iteration,
    ...(toolUseTasks !== undefined ? { toolUseTasks } : {}),
    ...(reasoning
      ? {
          reasoning: {
            synthesisRunId: reasoning.synthesisRunId ?? synthesisRunId,
            problems: reasoning.problems,
            search: reasoning.search !== undefined,
          },
        }
      : {}),
  };
}
