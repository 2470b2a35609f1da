import type { GrpoSpec } from '../schemas/grpo-spec.js';
import type { TrainerActivities } from '../schemas/trainer-contract.js';

type TrackingConfig = Parameters<TrainerActivities['trainer.trackIteration']>[0]['config'];

/**
 * A training run's hyper-parameters for the experiment trackers (logged once per run). Chosen
 * field by field so that nothing else of the spec leaves: no endpoints, no key variable names.
 * The model spec and the step's optimizer settings the trainer tracks itself (`trainer.model.*`,
 * `trainer.step_config.*`).
 */
export function trackingConfig(spec: GrpoSpec): TrackingConfig {
  return {
    synthesisRunId: spec.dataset.synthesisRunId,
    heldOutTasks: spec.dataset.heldOutTasks,
    globalBatch: spec.globalBatch,
    miniBatch: spec.miniBatch,
    packTokens: spec.packTokens,
    rolloutsPerTask: spec.rolloutsPerTask,
    maxTurns: spec.maxTurns,
    maxResponseTokens: spec.maxResponseTokens,
    truncation: spec.truncation,
    maxUnjudgedFraction: spec.maxUnjudgedFraction,
    clipLow: spec.clipLow,
    clipHigh: spec.clipHigh,
    learningRate: spec.learningRate,
    epochs: spec.epochs,
    evaluateEvery: spec.evaluateEvery,
    seed: spec.seed,
    sampling: {
      temperature: spec.policy.sampling.temperature,
      topP: spec.policy.sampling.topP,
      maxTokens: spec.policy.sampling.maxTokens,
    },
  };
}
