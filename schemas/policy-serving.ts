/**
 * Where a GRPO run's rollouts are sampled, and how each new policy reaches that server: the
 * `policy.serving` part of a GrpoTraining spec and the input and output of the weight-sync
 * activity (activities/training/weight-sync.ts). Without `policy.serving` the run samples from
 * `policy.endpoint` as before (the built-in policy server reloads new steps by itself, unchecked).
 */
import { z } from 'zod';
import { credentialFreeUrl } from './url-credentials.js';

/**
 * The engine behind the rollout endpoints. `mockworld`: the built-in policy server
 * (`python -m mockworld_trainer.policy_server`), which reloads from the checkpoint directory by
 * itself; the sync only checks the version it serves. `vllm` / `sglang`: the serving engines, told
 * through their own admin APIs to load each step.
 */
export const ServingEngineSchema = z.enum(['mockworld', 'vllm', 'sglang']);
export type ServingEngine = z.infer<typeof ServingEngineSchema>;

/**
 * How a new step reaches the engine. `full`: the step's weights directory is reloaded in place
 * (vLLM: sleep, wake the weights, `reload_weights`, wake the KV cache; SGLang:
 * `/update_weights_from_disk` with a weight version). `lora`: the step's LoRA adapter is loaded by
 * name (vLLM `/v1/load_lora_adapter`, SGLang `/load_lora_adapter`) and rollouts request that name;
 * needs a LoRA policy (`policy.lora`).
 */
export const WeightSyncModeSchema = z.enum(['full', 'lora']);
export type WeightSyncMode = z.infer<typeof WeightSyncModeSchema>;

/** `policy.serving` of a GrpoTraining spec. */
export const PolicyServingSchema = z.strictObject({
  engine: ServingEngineSchema.describe('The engine behind the replicas: mockworld, vllm or sglang.'),
  replicas: z
    .array(credentialFreeUrl("the replicas' key goes in policy.endpoint.apiKeyEnv"))
    .min(1)
    .max(256)
    .optional()
    .describe(
      'OpenAI-compatible base URLs of the rollout replicas (e.g. http://gpu-1:8000/v1), all serving the ' +
        'same policy; task groups are spread over them. Unset: [policy.endpoint.baseUrl].',
    ),
  sync: WeightSyncModeSchema.default('full').describe(
    'full: reload the step weights in place; lora: load the step adapter by name (needs policy.lora).',
  ),
  attempts: z
    .number()
    .int()
    .min(1)
    .max(20)
    .default(4)
    .describe('Tries of each admin call to a replica (5xx, 429, refused connections) before the sync fails.'),
  requestTimeoutMs: z
    .number()
    .int()
    .min(100)
    .default(600_000)
    .describe('Timeout of one admin call; a full reload of a large model takes minutes.'),
  verifyTimeoutMs: z
    .number()
    .int()
    .min(0)
    .default(60_000)
    .describe('How long a replica may take to report the new version after it accepted the load.'),
});
export type PolicyServing = z.infer<typeof PolicyServingSchema>;

/** Input of the `syncPolicyWeights` activity: make every replica serve `step` of `runId`. */
export const SyncPolicyInputSchema = z.strictObject({
  runId: z.string().min(1),
  step: z.number().int().min(0).describe('The applied step to serve; 0 is the base model.'),
  serving: PolicyServingSchema,
  /** The OpenAI base URLs to sync (serving.replicas, or the policy endpoint). */
  replicas: z.array(credentialFreeUrl("the replicas' key goes in policy.endpoint.apiKeyEnv")).min(1),
  /** The model name the replicas serve the base under (policy.endpoint.model). */
  baseModel: z.string().min(1),
  /** The step's weights directory (full sync); null at step 0 of a model the engine was started with. */
  modelPath: z.string().min(1).nullable(),
  /** The step's LoRA adapter directory (lora sync); null at step 0 (the base model). */
  adapterPath: z.string().min(1).nullable(),
  /** Name of the environment variable holding the replicas' API key (policy.endpoint.apiKeyEnv). */
  apiKeyEnv: z.string().optional(),
});
export type SyncPolicyInput = z.infer<typeof SyncPolicyInputSchema>;

/** What one replica serves after the sync. */
export const ReplicaStateSchema = z.strictObject({
  url: z.string(),
  /** What the replica reported as its version (policy_version, weight_version, adapter listed). */
  served: z.string(),
  /** Whether this call pushed anything (false: the replica already served the step). */
  pushed: z.boolean(),
  /** Admin calls that failed and were tried again. */
  retries: z.number().int().min(0),
});

/** Output of `syncPolicyWeights`: the model name rollouts of this step request, replica by replica. */
export const SyncPolicyResultSchema = z.strictObject({
  step: z.number().int().min(0),
  servedModel: z.string().min(1),
  replicas: z.array(ReplicaStateSchema),
});
export type SyncPolicyResult = z.infer<typeof SyncPolicyResultSchema>;

/** The adapter name step `step` of `runId` is loaded under (unique per step: engines cache by name). */
export function adapterName(runId: string, step: number): string {
  return `${runId}-step-${step}`;
}

/** The weight version a full sync tags step `step` with (the policy version of its rollouts). */
export function weightVersion(step: number): string {
  return `step-${step}`;
}
