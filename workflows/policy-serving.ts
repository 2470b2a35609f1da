import { proxyActivities } from '@temporalio/workflow';
import type { TrainingActivities } from '../activities/training/index.js';
import type { GrpoSpec } from '../schemas/grpo-spec.js';
import type { SyncPolicyResult } from '../schemas/policy-serving.js';
import { WEIGHT_SYNC_RETRY } from './activity-options.js';

/**
 * Weight sync of a GrpoTraining run whose spec has `policy.serving` (schemas/policy-serving.ts):
 * which replicas a task group samples from, under which model name, and the activity that makes
 * the replicas serve a step. A run without `policy.serving` never calls any of this, so its
 * commands, and the recorded histories of such runs, are unchanged.
 *
 * The sync's own retry policy: a stale replica (StalePolicyError) is pushed again a few times,
 * then the run fails before sampling rollouts from it; a refused admin call or a bad input
 * (WeightSyncRejectedError, WeightSyncInputError: in the list every CPU activity's policy takes
 * from activities/errors.ts) fails it at once.
 */
const { syncPolicyWeights } = proxyActivities<Pick<TrainingActivities, 'syncPolicyWeights'>>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '1 minute',
  retry: WEIGHT_SYNC_RETRY,
});

type Policy = GrpoSpec['policy'];

/** The rollout replicas: `serving.replicas`, else the policy endpoint alone. */
export function servingReplicas(policy: Policy): string[] {
  return policy.serving?.replicas ?? [policy.endpoint.baseUrl];
}

/**
 * Makes every replica serve `step` (weights in `modelPath`, adapter in `adapterPath`) and checks
 * it; returns what rollouts of the step must request.
 */
export function syncServedPolicy(
  runId: string,
  policy: Policy,
  step: number,
  paths: { readonly modelPath: string | null; readonly adapterPath?: string | null },
): Promise<SyncPolicyResult> {
  const serving = policy.serving!;
  return syncPolicyWeights({
    runId,
    step,
    serving,
    replicas: servingReplicas(policy),
    baseModel: policy.endpoint.model,
    modelPath: paths.modelPath,
    adapterPath: paths.adapterPath ?? null,
    ...(policy.endpoint.apiKeyEnv ? { apiKeyEnv: policy.endpoint.apiKeyEnv } : {}),
  });
}

/**
 * The policy part of the `index`-th task group's spec: its replica (round robin over the replicas,
 * so groups spread evenly) and the model name the synced step is served under. Unchanged without
 * a sync result (no `policy.serving`).
 */
export function groupPolicy(policy: Policy, served: SyncPolicyResult | undefined, index: number): Policy {
  if (!served) return policy;
  const replicas = servingReplicas(policy);
  return {
    ...policy,
    endpoint: { ...policy.endpoint, baseUrl: replicas[index % replicas.length]!, model: served.servedModel },
  };
}
