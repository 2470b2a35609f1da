/**
 * The GRPO training loop's CPU-side activities (seed §3.4, App. A): which tasks an iteration
 * trains on, the policy's rollouts in the mock world, the trainer's batch in PostgreSQL (the
 * Python trainer reads it by reference), and per-iteration metrics. Inputs and outputs are small
 * JSON; transcripts and batches stay in the database.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { NON_RETRYABLE_ACTIVITY_ERRORS } from '../errors.js';
import { heartbeatProgress } from '../heartbeat.js';
import { rolloutReward, rolloutsJudged } from '../telemetry/metrics.js';
import type { ModelClient } from '../llm/index.js';
import type { JudgeInputData } from '../../schemas/rubric-judge.js';
import { ensureRubricControls, judgeOrRecordUnjudged, type JudgementSummary } from '../reward/index.js';
import { getPool } from '../store/db.js';
import { createEpisodeRunner, type EpisodeHooks } from '../world/index.js';
import {
  recordIterationMetrics,
  summarizeRollouts,
  type RecordIterationMetricsInput,
  type SummarizeRolloutsInput,
} from './metrics.js';
import { planIteration, type PlanIterationInput } from './plan.js';
import { runRollout, type RolloutInput, type RolloutSummary } from './rollout.js';
import {
  runReasoningRollout,
  type ReasoningRolloutInput,
  type ReasoningRolloutResult,
} from './reasoning-rollout.js';
import { DEFAULT_SANDBOX_VENV, locateSandbox, type SandboxInstall } from '../sandbox/install.js';
import { buildTrainerBatch, type BuildTrainerBatchInput } from './trainer-batch.js';
import { buildIterationBatch, type BuildIterationBatchInput } from './iteration-batch.js';
import { buildSftDataset, type BuildSftDatasetInput } from './sft-dataset.js';
import { syncPolicyWeights } from './weight-sync.js';
import type { SyncPolicyInput } from '../../schemas/policy-serving.js';

export { episodePrefix, trainingEpisodeId, type TrainingPurpose } from './episode-ids.js';
export { TrainerBatchError, TrainingPlanError, UnjudgedRolloutsError } from './errors.js';
export {
  recordIterationMetrics,
  summarizeRollouts,
  type RecordIterationMetricsInput,
  type RolloutSummaryMetrics,
  type SummarizeRolloutsInput,
} from './metrics.js';
export { planIteration, type IterationPlan, type PlanIterationInput } from './plan.js';
export { buildSftDataset, type BuildSftDatasetInput, type SftDataset } from './sft-dataset.js';
export { POLICY_ROLE, runRollout, type RolloutInput, type RolloutSummary } from './rollout.js';
export {
  iterationSlice,
  mixSeed,
  mulberry32,
  seededShuffle,
  splitHeldOut,
  type HeldOutSplit,
  type IterationSlice,
} from './sampling.js';
export {
  buildTrainerBatch,
  TRAINER_BATCHES_TABLE,
  type BuildTrainerBatchInput,
  type PostgresBatchRef,
  type TrainerBatchItem,
  type TrainerBatchSummary,
} from './trainer-batch.js';

/** The training activities, bound to one database and model client. */
export function createTrainingActivities(
  databaseUrl: string,
  models: ModelClient,
  sandboxVenv: string = DEFAULT_SANDBOX_VENV,
) {
  const pool = () => getPool(databaseUrl);
  const world = createEpisodeRunner({ databaseUrl, models });
  let sandbox: SandboxInstall | undefined; // located on first use: a tool-use run needs none

  /**
   * One rollout ({@link runRollout}), then its judgement (`judgeEpisode`). A retry resumes the
   * episode from its last turn (a finished one returns at once) and reuses a stored judgement; a
   * judge endpoint failure fails the attempt and is never a score; a judge answer still malformed
   * after its repair and one redraw records the rollout as unjudged (not trained on, counted;
   * reward/unjudged.ts). An episode the world rejected (a simulator gave no usable answer,
   * `world.*SimulatorFailure: reject`) is not judged: its row says why, and the group trains on
   * the others.
   */
  const judgedRollout = async (input: JudgedRolloutInput, hooks: EpisodeHooks): Promise<JudgedRollout> => {
    const episode = await runRollout(world, input, hooks);
    if (episode.endReason === 'simulator_failed') {
      return { episodeId: episode.episodeId, turns: episode.turns, rejected: episode.endReason };
    }
    const judgement = await judgeOrRecordUnjudged(
      { pool: pool(), models, signal: hooks.signal },
      {
        episodeId: episode.episodeId,
        taskId: input.taskId,
        judge: input.judge,
        runId: input.runId,
        templates: input.templates,
        policyVersion: String(input.policyVersion),
      },
    );
    if ('reward' in judgement) {
      rolloutsJudged.inc();
      rolloutReward.observe(judgement.reward);
    }
    return { ...judgement, turns: episode.turns };
  };
  /** The judge's controls on the task (rubric-controls.ts): graded once per run, beside its rollouts. */
  const controlTheJudge = (input: Omit<JudgedRolloutInput, 'sampleIndex'>, signal?: AbortSignal) =>
    ensureRubricControls(
      { pool: pool(), models, signal },
      {
        runId: input.runId,
        taskId: input.taskId,
        judge: input.judge,
        templates: input.templates,
        policyVersion: String(input.policyVersion),
      },
    );
  return {
    /**
     * The task ids of one 0-based iteration, its epoch, and the held-out set. Deterministic.
     * Not retryable: `TrainingPlanError`.
     */
    async planIteration(input: PlanIterationInput) {
      return planIteration(pool(), input);
    },

    /**
     * One rollout and its judgement in one activity: what GrpoGroup scheduled per rollout before
     * {@link runJudgedRolloutGroup}, kept for the runs still on that path; see
     * {@link judgedRollout}. Not retryable: `UngradableRubricError`, `EpisodeNotGradableError`.
     */
    async runJudgedRollout(input: JudgedRolloutInput): Promise<JudgedRollout> {
      const hooks = activityHooks();
      const [rollout] = await Promise.all([
        judgedRollout(input, hooks),
        controlTheJudge(input, hooks.signal),
      ]);
      return rollout;
    },

    /**
     * A GRPO group's n rollouts of one task, each judged, in one activity (what GrpoGroup
     * schedules): the rollouts run at once, as n activities would, for one activity's orchestration
     * instead of n (bench/grpo.ts: history events, dev-server and worker CPU per rollout). Each
     * rollout checkpoints its turns and its judgement on its own, so a retry of the group (a killed
     * worker, a failed rollout) resumes every rollout where it stopped and pays for nothing again.
     * A failed rollout fails the attempt only once every other rollout has settled: a retry never
     * runs beside a rollout of the attempt before it. Not retryable: as {@link runJudgedRollout}.
     */
    async runJudgedRolloutGroup(input: JudgedRolloutGroupInput): Promise<JudgedRolloutGroup> {
      const { rollouts, ...rollout } = input;
      const hooks = groupHooks(rollouts);
      const [controls, ...settled] = await Promise.allSettled([
        controlTheJudge(rollout, hooks(0).signal),
        ...Array.from({ length: rollouts }, (_, sampleIndex) =>
          judgedRollout({ ...rollout, sampleIndex }, hooks(sampleIndex)),
        ),
      ]);
      const failures = [controls!, ...settled].flatMap((r) =>
        r.status === 'rejected' ? [r.reason as unknown] : [],
      );
      // A failure a retry cannot fix decides the attempt: retrying for a transient one would only
      // meet it again.
      if (failures.length) throw failures.find(isNonRetryable) ?? failures[0];
      const results = settled.map((r) => (r as PromiseFulfilledResult<JudgedRollout>).value);
      return {
        judged: results.filter((r) => r.rejected === undefined && r.unjudged === undefined).length,
        rejected: results.filter((r) => r.rejected !== undefined).length,
        unjudged: results.filter((r) => 'unjudged' in r && r.unjudged !== undefined).length,
      };
    },

    /**
     * One rollout of a reasoning problem and its correctness reward (reasoning-rollout.ts): the
     * policy with the real `python` (and `search`) tool, then 1/0 by answer correctness. A retry
     * resumes the episode and finds the stored reward. Not retryable: `TaskNotReadyError` (a
     * problem not kept, or a search problem with no search backend).
     */
    async runReasoningRollout(input: ReasoningRolloutInput): Promise<ReasoningRolloutResult> {
      const hooks = activityHooks();
      const result = await runReasoningRollout(
        {
          pool: pool(),
          models,
          sandbox: () => ({ install: (sandbox ??= locateSandbox(sandboxVenv)), signal: hooks.signal }),
        },
        input,
        hooks,
      );
      rolloutsJudged.inc();
      rolloutReward.observe(result.reward);
      return result;
    },

    /**
     * Writes the step's GRPO records to `trainer_batches` (idempotent) and returns the batch_ref
     * with reward statistics. Not retryable: `TrainerBatchError`.
     */
    async buildTrainerBatch(input: BuildTrainerBatchInput) {
      return buildTrainerBatch(pool(), input);
    },

    /**
     * The trainer batch of one iteration, collected from PostgreSQL (iteration-batch.ts): every
     * judged rollout of the iteration that may be trained on, with its reward, and what was left
     * out (truncated under `drop`). Not retryable: `TrainerBatchError`.
     */
    async buildIterationBatch(input: BuildIterationBatchInput) {
      return buildIterationBatch(pool(), input);
    },

    /**
     * Makes every rollout replica serve the step just applied (vLLM / SGLang admin APIs, or the
     * built-in policy server's own reload) and checks the version each reports; see
     * weight-sync.ts. Not retryable: `WeightSyncRejectedError`, `WeightSyncInputError`;
     * `StalePolicyError` and `ReplicaUnavailableError` are retried.
     */
    async syncPolicyWeights(input: SyncPolicyInput) {
      return syncPolicyWeights(input, {
        onReplica: (done, total) => heartbeatProgress({ phase: 'weight-sync', done, total }),
      });
    },

    /**
     * An SftTraining run's data set: the kept demonstrations of its synthesis run, written as one
     * trainer batch per step (idempotent). Not retryable: `TrainingPlanError` (too few of them).
     */
    async buildSftDataset(input: BuildSftDatasetInput) {
      return buildSftDataset(pool(), input);
    },

    /** Upserts the iteration's metrics into `training_metrics`. */
    async recordIterationMetrics(input: RecordIterationMetricsInput) {
      return recordIterationMetrics(pool(), input);
    },

    /** Reward, rubric, turn and token aggregates of one iteration's episodes. */
    async summarizeRollouts(input: SummarizeRolloutsInput) {
      return summarizeRollouts(pool(), input);
    },
  };
}

/** A rollout and the judge that grades it. */
export interface JudgedRolloutInput extends RolloutInput {
  readonly judge: JudgeInputData['judge'];
}

/**
 * A judged rollout, one the world rejected (not judged; the episode row says why), or one the
 * judge could not grade (`unjudged`: the reason; recorded in unjudged_rollouts).
 */
export type JudgedRollout =
  | (JudgementSummary & {
      readonly turns: number;
      readonly rejected?: undefined;
      readonly unjudged?: undefined;
    })
  | { readonly episodeId: string; readonly turns: number; readonly rejected: 'simulator_failed' }
  | {
      readonly episodeId: string;
      readonly turns: number;
      readonly unjudged: string;
      readonly rejected?: undefined;
    };

/** A GRPO group's rollouts: every field of one rollout but its sample index, and how many (0..n-1). */
export interface JudgedRolloutGroupInput extends Omit<JudgedRolloutInput, 'sampleIndex'> {
  readonly rollouts: number;
}

/** How a group's rollouts ended (the rewards stay in PostgreSQL: judgements). */
export interface JudgedRolloutGroup {
  readonly judged: number;
  readonly rejected: number;
  readonly unjudged: number;
}

/** The training activities' interface, for `proxyActivities`. */
export type TrainingActivities = ReturnType<typeof createTrainingActivities>;

/**
 * Hooks for each rollout of a group in one activity: one shared cancellation, and one heartbeat
 * that carries every rollout's turn (the Temporal UI shows the group's progress).
 */
function groupHooks(rollouts: number): (sampleIndex: number) => EpisodeHooks {
  const { signal } = activityHooks();
  const turns = Array.from({ length: rollouts }, () => 0);
  return (sampleIndex) => ({
    signal,
    onTurn: ({ turns: done }) => {
      turns[sampleIndex] = done;
      heartbeatProgress({ rollouts, turns });
    },
  });
}

/** Whether a retry cannot fix `error` (its type is listed non-retryable, or it says so itself). */
function isNonRetryable(error: unknown): boolean {
  if (error instanceof ApplicationFailure && error.nonRetryable) return true;
  return error instanceof Error && NON_RETRYABLE_ACTIVITY_ERRORS.includes(error.name);
}

/** Heartbeat and cancellation of the current activity; none when called outside one (scripts, tests). */
export function activityHooks(): EpisodeHooks {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return {};
  }
  return { onTurn: heartbeatProgress, signal: context.cancellationSignal };
}
