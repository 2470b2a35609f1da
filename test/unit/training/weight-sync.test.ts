import { ApplicationFailure } from '@temporalio/activity';
import { afterEach, describe, expect, it } from 'vitest';
import { syncPolicyWeights } from '../../../activities/training/weight-sync.js';
import { StalePolicyError } from '../../../activities/training/weight-sync-errors.js';
import { PolicyServingSchema, type SyncPolicyInput } from '../../../schemas/policy-serving.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import type { EngineKind } from '../../../testkit/serving-engine.js';

const RUN = 'grpo-sync';
const noWait = { sleep: async () => {} };

describe('syncPolicyWeights against the serving-engine double', () => {
  const servers: ModelServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function replicas(engine: EngineKind, n: number): Promise<ModelServer[]> {
    const started = await Promise.all(
      Array.from({ length: n }, () => startModelServer({ engine, models: ['base'], script: () => 'ok' })),
    );
    servers.push(...started);
    return started;
  }

  function input(
    replicas: ModelServer[],
    engine: EngineKind,
    sync: 'full' | 'lora',
    step: number,
    serving: Record<string, unknown> = {},
  ): SyncPolicyInput {
    return {
      runId: RUN,
      step,
      serving: PolicyServingSchema.parse({ engine, sync, verifyTimeoutMs: 300, ...serving }),
      replicas: replicas.map((r) => r.url),
      baseModel: 'base',
      modelPath: step === 0 ? null : `/ckpt/${RUN}/step-${step}/model`,
      adapterPath: step === 0 ? null : `/ckpt/${RUN}/step-${step}/adapter`,
    };
  }

  async function chat(server: ModelServer, model: string): Promise<number> {
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return response.status;
  }

  it('vLLM LoRA: loads each step adapter by name on every replica, verifies it is listed, unloads the old one', async () => {
    const rs = await replicas('vllm', 2);
    const first = await syncPolicyWeights(input(rs, 'vllm', 'lora', 1), noWait);
    expect(first.servedModel).toBe(`${RUN}-step-1`);
    expect(first.replicas.map((r) => [r.served, r.pushed])).toEqual([
      [`${RUN}-step-1`, true],
      [`${RUN}-step-1`, true],
    ]);
    const second = await syncPolicyWeights(input(rs, 'vllm', 'lora', 2), noWait);
    expect(second.servedModel).toBe(`${RUN}-step-2`);
    for (const r of rs) {
      expect([...r.engine!.state.adapters]).toEqual([[`${RUN}-step-2`, `/ckpt/${RUN}/step-2/adapter`]]);
      expect(r.engine!.state.calls.map((c) => `${c.method} ${c.route} ${c.status}`)).toEqual([
        'POST /v1/load_lora_adapter 200',
        'POST /v1/load_lora_adapter 200',
        'POST /v1/unload_lora_adapter 200',
      ]);
      expect(await chat(r, `${RUN}-step-2`)).toBe(200);
      expect(await chat(r, `${RUN}-step-1`)).toBe(404); // a stale name is not served any more
    }
    // A retried attempt (or the check at the start of a continued run) pushes nothing again.
    const again = await syncPolicyWeights(input(rs, 'vllm', 'lora', 2), noWait);
    expect(again.replicas.every((r) => !r.pushed)).toBe(true);
    expect(rs[0]!.engine!.state.calls).toHaveLength(3);
  });

  it('step 0 of a LoRA run is the base model, which needs no load', async () => {
    const rs = await replicas('sglang', 1);
    const result = await syncPolicyWeights(input(rs, 'sglang', 'lora', 0), noWait);
    expect(result).toMatchObject({
      step: 0,
      servedModel: 'base',
      replicas: [{ served: 'base', pushed: false }],
    });
    expect(rs[0]!.engine!.state.calls).toEqual([]);
  });

  it('SGLang full: update_weights_from_disk with the step weight version, read back from /model_info', async () => {
    const rs = await replicas('sglang', 2);
    const result = await syncPolicyWeights(input(rs, 'sglang', 'full', 3), noWait);
    expect(result.servedModel).toBe('base');
    for (const r of rs) {
      expect(r.engine!.state).toMatchObject({
        weightVersion: 'step-3',
        weightsPath: `/ckpt/${RUN}/step-3/model`,
      });
      expect(r.engine!.state.calls.map((c) => c.route)).toEqual([
        '/model_info',
        '/update_weights_from_disk',
        '/model_info',
      ]);
    }
    const again = await syncPolicyWeights(input(rs, 'sglang', 'full', 3), noWait);
    expect(again.replicas.map((r) => r.pushed)).toEqual([false, false]);
  });

  it('SGLang LoRA uses the routes at the root', async () => {
    const rs = await replicas('sglang', 1);
    await syncPolicyWeights(input(rs, 'sglang', 'lora', 1), noWait);
    expect(rs[0]!.engine!.state.calls.map((c) => c.route)).toEqual(['/load_lora_adapter']);
    expect(await chat(rs[0]!, `${RUN}-step-1`)).toBe(200);
  });

  it('vLLM full: sleep, wake the weights, reload_weights from the step directory, wake the KV cache', async () => {
    const rs = await replicas('vllm', 1);
    await syncPolicyWeights(input(rs, 'vllm', 'full', 1), noWait);
    const state = rs[0]!.engine!.state;
    expect(state.calls.map((c) => `${c.method} ${c.route}`)).toEqual([
      'GET /is_sleeping',
      'POST /sleep?level=2',
      'POST /wake_up?tags=weights',
      'POST /collective_rpc',
      'POST /wake_up?tags=kv_cache',
      'GET /is_sleeping',
    ]);
    expect(state.calls[3]!.body).toEqual({
      method: 'reload_weights',
      kwargs: { weights_path: `/ckpt/${RUN}/step-1/model` },
    });
    expect(state.weightsPath).toBe(`/ckpt/${RUN}/step-1/model`);
    expect(await chat(rs[0]!, 'base')).toBe(200);
  });

  it('retries an admin call that fails with a 5xx, and counts the retries', async () => {
    const rs = await replicas('vllm', 1);
    rs[0]!.engine!.injectAdminFaults(
      { kind: 'admin-error', status: 503, route: '/v1/load_lora_adapter' },
      { kind: 'admin-error', status: 500, route: '/v1/load_lora_adapter' },
    );
    const result = await syncPolicyWeights(input(rs, 'vllm', 'lora', 1), noWait);
    expect(result.replicas[0]).toMatchObject({ served: `${RUN}-step-1`, pushed: true, retries: 2 });
  });

  it('gives up on a replica whose admin API keeps failing (retryable for the activity)', async () => {
    const rs = await replicas('sglang', 1);
    const faults = Array.from({ length: 3 }, () => ({ kind: 'admin-error' as const, status: 502 }));
    rs[0]!.engine!.injectAdminFaults(...faults);
    await expect(
      syncPolicyWeights(input(rs, 'sglang', 'full', 1, { attempts: 3 }), noWait),
    ).rejects.toMatchObject({ name: 'ReplicaUnavailableError' });
  });

  it('a 4xx (route not enabled, path not readable) is non-retryable', async () => {
    const rs = await replicas('vllm', 1);
    rs[0]!.engine!.injectAdminFaults({ kind: 'admin-error', status: 404, route: '/v1/load_lora_adapter' });
    const error = await syncPolicyWeights(input(rs, 'vllm', 'lora', 1), noWait).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: 'WeightSyncRejectedError', nonRetryable: true });
    expect((error as Error).message).toMatch(/refused POST \/v1\/load_lora_adapter \(HTTP 404\)/);
  });

  it('refuses a replica that accepts the load but keeps serving the old version', async () => {
    const rs = await replicas('sglang', 2);
    rs[1]!.engine!.state.ignoreLoads = true;
    const error = await syncPolicyWeights(input(rs, 'sglang', 'full', 2), {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalePolicyError);
    expect(error).toMatchObject({ replica: rs[1]!.url, expected: 'step-2', served: 'default' });
    expect((error as Error).message).toMatch(/refusing to sample rollouts from a stale policy/);

    const lora = await replicas('vllm', 1);
    lora[0]!.engine!.state.ignoreLoads = true;
    await expect(syncPolicyWeights(input(lora, 'vllm', 'lora', 1), {})).rejects.toBeInstanceOf(
      StalePolicyError,
    );
    expect(await chat(lora[0]!, `${RUN}-step-1`)).toBe(404); // and a rollout there would have failed
  });
});
