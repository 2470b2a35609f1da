import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { fixturePolicy, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const SYNTHESIS_RUN = 'synthesis-sync';

/**
 * GrpoTraining with `policy.serving`: rollouts on two SGLang replicas (the scripted model server
 * playing SGLang's admin API), the real Python trainer, and the weight-sync activity between the
 * trainer step and the next rollouts.
 */
describe('GRPO rollouts on serving-engine replicas, synced after every step', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let trainer: PythonProcess;
  let pythonEnv: Record<string, string>;
  const gpuQueue = `gpu-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-sync-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: 2 });
    models = await startModelServer({ script: grpoFixtureScript });
    pythonEnv = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
      MOCKWORLD_CHECKPOINT_DIR: path.join(dir, 'checkpoints'),
      MOCKWORLD_TRAINER_DEVICE: 'cpu',
      DATABASE_URL: db.url,
    };
    trainer = startPython('mockworld_trainer.worker', [], pythonEnv, /trainer worker:/);
    await trainer.ready;
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await trainer?.kill();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  async function replicas(engine: 'sglang' | 'vllm' = 'sglang'): Promise<ModelServer[]> {
    return Promise.all(
      [0, 1].map(() =>
        startModelServer({
          engine,
          models: ['qwen-policy'],
          script: [{ role: 'policy', reply: 'Record R-0 is fixed.' }],
        }),
      ),
    );
  }

  function start(runId: string, rs: ModelServer[], lora = false, engine?: 'mockworld') {
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    // The built-in policy server answers to the run id (or 'policy'); the engines to their served name.
    const policy = fixturePolicy({ baseUrl: rs[0]!.url, model: engine ? runId : 'qwen-policy' });
    return tw.client.workflow.start('GrpoTraining', {
      args: [
        {
          dataset: { synthesisRunId: SYNTHESIS_RUN },
          policy: {
            ...policy,
            ...(lora ? { base: { ...policy.base, lora: { r: 4 } } } : {}),
            serving: {
              engine: engine ?? (lora ? 'vllm' : 'sglang'),
              sync: lora ? 'lora' : 'full',
              replicas: rs.map((r) => r.url),
              verifyTimeoutMs: 300,
            },
          },
          judge: role,
          toolSimulator: role,
          userSimulator: role,
          globalBatch: 2,
          miniBatch: 2,
          rolloutsPerTask: 2,
          maxTurns: 1,
          learningRate: 1e-3,
          epochs: engine ? 1 : 2,
          gpuTaskQueue: gpuQueue,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
  }

  /** Arrival times of the policy's chat requests at a replica. */
  const policyCalls = (r: ModelServer) => r.requests.filter((q) => q.role === 'policy').map((q) => q.at);

  it('pushes every step to every replica and samples the next rollouts only once each serves it', async () => {
    const rs = await replicas();
    try {
      const runId = `grpo-sync-${Date.now()}`;
      const summary = await (await start(runId, rs)).result();
      expect(summary).toMatchObject({ iterations: 2, policyStep: 2 });
      for (const r of rs) {
        const updates = r.engine!.state.calls.filter((c) => c.route === '/update_weights_from_disk');
        expect(updates.map((c) => c.body)).toEqual([
          {
            model_path: path.join(dir, 'checkpoints', runId, 'step-00000001', 'model'),
            weight_version: 'step-1',
          },
          {
            model_path: path.join(dir, 'checkpoints', runId, 'step-00000002', 'model'),
            weight_version: 'step-2',
          },
        ]);
        expect(r.engine!.state.weightVersion).toBe('step-2');
        // One task group per replica (round robin): 2 rollouts per iteration each, and iteration
        // 1's only after this replica reported step-1.
        const calls = policyCalls(r);
        expect(calls).toHaveLength(4);
        const verified = r.engine!.state.calls.find(
          (c) => c.route === '/model_info' && c.at > updates[0]!.at,
        )!;
        expect(calls.filter((at) => at > verified.at)).toHaveLength(2);
      }
    } finally {
      await Promise.all(rs.map((r) => r.close()));
    }
  });

  it('a LoRA run: each step adapter loaded by name on every vLLM replica, rollouts request it, old ones unloaded', async () => {
    const rs = await replicas('vllm');
    try {
      const runId = `grpo-lora-${Date.now()}`;
      expect(await (await start(runId, rs, true)).result()).toMatchObject({ policyStep: 2 });
      const step = (n: number) => path.join(dir, 'checkpoints', runId, `step-0000000${n}`, 'adapter');
      for (const r of rs) {
        expect(
          r.engine!.state.calls.filter((c) => c.method === 'POST').map((c) => [c.route, c.body]),
        ).toEqual([
          ['/v1/load_lora_adapter', { lora_name: `${runId}-step-1`, lora_path: step(1) }],
          ['/v1/load_lora_adapter', { lora_name: `${runId}-step-2`, lora_path: step(2) }],
          ['/v1/unload_lora_adapter', { lora_name: `${runId}-step-1` }],
        ]);
        // Iteration 0 sampled the base model, iteration 1 the step-1 adapter, by name.
        const asked = r.requests.filter((q) => q.role === 'policy').map((q) => q.body.model);
        expect(asked).toEqual(['qwen-policy', 'qwen-policy', `${runId}-step-1`, `${runId}-step-1`]);
      }
    } finally {
      await Promise.all(rs.map((r) => r.close()));
    }
  });

  it('the built-in policy server: the sync checks the policy_version it reports', async () => {
    const runId = `grpo-builtin-${Date.now()}`;
    const server = startPython(
      'mockworld_trainer.policy_server',
      ['--run-id', runId, '--port', '0', '--base', 'tiny', '--default-max-tokens', '16'],
      pythonEnv,
      /policy server for run/,
    );
    try {
      const url = /(http:\/\/\S+\/v1)/.exec(await server.ready)![1]!;
      const fake = { url } as ModelServer; // only its URL is read: the replica is the policy server
      const handle = await start(runId, [fake], false, 'mockworld');
      expect(await handle.result()).toMatchObject({ iterations: 1, policyStep: 1 });
      // Synced at the run's start (step 0) and after its one step: each reported by the server itself.
      const synced = (await handle.fetchHistory()).events!.flatMap((e) => {
        const data = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data;
        const text = data ? Buffer.from(data).toString() : '';
        const result = text ? JSON.parse(text) : undefined; // activities that return nothing have no data
        return result?.servedModel ? [result.replicas.map((r: { served: string }) => r.served)] : [];
      });
      expect(synced).toEqual([['step-0'], ['step-1']]);
    } finally {
      await server.kill();
    }
  });

  it('fails the run before any rollout of the next iteration when a replica keeps serving a stale version', async () => {
    const rs = await replicas();
    try {
      rs[1]!.engine!.state.ignoreLoads = true; // accepts every load, keeps serving the start-up weights
      const handle = await start(`grpo-stale-${Date.now()}`, rs);
      const error = await handle.result().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorkflowFailedError);
      expect(JSON.stringify((error as WorkflowFailedError).cause)).toMatch(/StalePolicyError/);
      // The sync was tried again (the activity's retries) and never got past the stale replica.
      const pushes = rs[1]!.engine!.state.calls.filter((c) => c.route === '/update_weights_from_disk');
      expect(pushes.length).toBeGreaterThan(1);
      // No rollout of iteration 1 on either replica: only iteration 0's 2 per replica.
      expect(rs.map((r) => policyCalls(r).length)).toEqual([2, 2]);
      const firstPush = Math.min(
        ...rs.map((r) => r.engine!.state.calls.find((c) => c.method === 'POST')!.at),
      );
      for (const r of rs) expect(policyCalls(r).every((at) => at < firstPush)).toBe(true);
    } finally {
      await Promise.all(rs.map((r) => r.close()));
    }
  });
});
