import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { storeCall } from '../../../activities/llm/call-store.js';
import { cacheKey, identify } from '../../../activities/llm/cache-key.js';
import { createModelClient, type ModelCall, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { SamplingSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { callRows, endpointOf, query, sampling, teacherCall } from './fixtures.js';

describe('the model response cache and usage ledger', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    db = await createTestDatabase('mw_llm_cache');
    server = await startModelServer();
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 20 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.setLatency(0);
    server.resetStats();
  });

  const call = (model: string, text: string, extra: Partial<ModelCall> = {}) =>
    teacherCall(server, 'run-cache', model, text, extra);

  it('serves a repeated call from the cache: no upstream call, one row, usage counted once', async () => {
    const first = await models.chat(call('c-repeat', 'what is 2+2?'));
    const again = await models.chat(call('c-repeat', 'what is 2+2?'));
    expect(first.cached).toBe(false);
    expect(again.cached).toBe(true);
    expect(again.message).toEqual(first.message);
    expect(again.usage).toEqual(first.usage);
    expect(first.usage.promptTokens).toBeGreaterThan(0);
    expect(server.requestCount()).toBe(1);
    const rows = await callRows(db.url, first.cacheKey);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      prompt_tokens: first.usage.promptTokens,
      completion_tokens: first.usage.completionTokens,
      run_id: 'run-cache',
      role: 'teacher',
    });
  });

  it('serves the stored answer to a fresh client instance, as a new worker would get it', async () => {
    const first = await models.chat(call('c-fresh', 'remember me'));
    const fresh = createModelClient({ databaseUrl: db.url });
    const again = await fresh.chat(call('c-fresh', 'remember me'));
    expect(again).toMatchObject({ cacheKey: first.cacheKey, cached: true, message: first.message });
    expect(server.requestCount()).toBe(1);
  });

  it('serves the stored answer to another process without an upstream call', async () => {
    const first = await models.chat(call('c-process', 'across processes'));
    const script = `
      const { createModelClient } = await import(${JSON.stringify(new URL('../../../activities/llm/index.ts', import.meta.url).pathname)});
      const { closePools } = await import(${JSON.stringify(new URL('../../../activities/store/db.ts', import.meta.url).pathname)});
      const result = await createModelClient({ databaseUrl: process.env.DB }).chat(JSON.parse(process.env.CALL));
      console.log(JSON.stringify(result));
      await closePools();`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        env: { ...process.env, DB: db.url, CALL: JSON.stringify(call('c-process', 'across processes')) },
      },
    );
    const other = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(other).toMatchObject({ cacheKey: first.cacheKey, cached: true, message: first.message });
    expect(server.requestCount()).toBe(1);
  });

  it('treats a different sample index or policy version as a different call', async () => {
    const results = await Promise.all([
      models.chat(call('c-samples', 'sample me')),
      models.chat(call('c-samples', 'sample me', { sampleIndex: 1 })),
      models.chat(call('c-samples', 'sample me', { policyVersion: 'step-100' })),
    ]);
    expect(new Set(results.map((r) => r.cacheKey)).size).toBe(3);
    expect(results.every((r) => !r.cached)).toBe(true);
    expect(server.requestCount()).toBe(3);
  });

  it('sends sample i with seed + i so the samples of a group can differ', async () => {
    const seeded = { ...sampling, seed: 100 };
    await models.chat(call('c-seed', 'seeded', { sampling: seeded, sampleIndex: 0 }));
    await models.chat(call('c-seed', 'seeded', { sampling: seeded, sampleIndex: 3 }));
    expect(server.requests.map((r) => r.body.seed)).toEqual([100, 103]);
  });

  it('sends penalties only when set, and a penalty makes a different call (0 is unset)', async () => {
    const penalized = SamplingSchema.parse({ ...sampling, frequencyPenalty: 0.5, presencePenalty: -0.25 });
    const plain = await models.chat(call('c-penalty', 'repeat less'));
    const zero = SamplingSchema.parse({ ...sampling, frequencyPenalty: 0, presencePenalty: 0 });
    const zeroAnswer = await models.chat(call('c-penalty', 'repeat less', { sampling: zero }));
    expect(zeroAnswer).toMatchObject({ cacheKey: plain.cacheKey, cached: true });
    const penalizedAnswer = await models.chat(call('c-penalty', 'repeat less', { sampling: penalized }));
    expect(penalizedAnswer.cacheKey).not.toBe(plain.cacheKey);
    const [first, second] = server.requests.map((r) => r.body);
    expect(first).not.toHaveProperty('frequency_penalty');
    expect(first).not.toHaveProperty('presence_penalty');
    expect(second).toMatchObject({ frequency_penalty: 0.5, presence_penalty: -0.25 });
  });

  it('makes one upstream call for concurrent identical calls in one process', async () => {
    server.setLatency(150);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => models.chat(call('c-flight', 'all at once'))),
    );
    expect(server.requestCount()).toBe(1);
    expect(results.filter((r) => !r.cached)).toHaveLength(1);
    expect(new Set(results.map((r) => JSON.stringify(r.message))).size).toBe(1);
    expect(await callRows(db.url, results[0]!.cacheKey)).toHaveLength(1);
  });

  it('keeps an in-flight call alive for the callers that did not abort', async () => {
    server.setLatency(300);
    const controller = new AbortController();
    const leaving = models.chat(call('c-leave', 'one leaves', { signal: controller.signal }));
    const staying = models.chat(call('c-leave', 'one leaves'));
    setTimeout(() => controller.abort(new Error('left')), 50);
    await expect(leaving).rejects.toThrow('left');
    const result = await staying;
    expect(result.message.content).toBe('echo: one leaves');
    expect(server.requestCount()).toBe(1);
  });

  it('returns the first stored answer to every racing writer and counts its usage once', async () => {
    const identity = identify(endpointOf(server, 'c-race'), {
      messages: [{ role: 'user', content: 'race' }],
      sampling,
    });
    const key = cacheKey(identity);
    const answer = (text: string, tokens: number) => ({
      ...identity,
      cacheKey: key,
      response: {
        message: { role: 'assistant' as const, content: text, refusal: null },
        finishReason: 'stop',
      },
      promptTokens: tokens,
      completionTokens: tokens,
      latencyMs: 1,
      attempts: 1,
    });
    const pool = getPool(db.url);
    const [a, b] = await Promise.all([
      storeCall(pool, answer('first', 5)),
      storeCall(pool, answer('second', 7)),
    ]);
    expect([a.inserted, b.inserted].sort()).toEqual([false, true]);
    expect(a.stored).toEqual(b.stored);
    const rows = await callRows(db.url, key);
    expect(rows).toHaveLength(1);
  });

  it('stores concurrent answers, each committed row returned to its caller, a bad row failing alone', async () => {
    const pool = getPool(db.url);
    const answer = (i: number, promptTokens = i) => {
      const identity = identify(
        endpointOf(server, 'c-batch'),
        { messages: [{ role: 'user', content: `batch ${i}` }], sampling },
        0,
        'base',
      );
      return {
        ...identity,
        cacheKey: cacheKey(identity),
        response: {
          message: { role: 'assistant' as const, content: `answer ${i}`, refusal: null },
          finishReason: 'stop',
        },
        promptTokens,
        completionTokens: 1,
        latencyMs: 1,
        attempts: 1,
      };
    };
    // 2^40 does not fit the integer column: that statement fails, and only its caller sees it.
    const calls = Array.from({ length: 60 }, (_, i) => answer(i, i === 17 ? 2 ** 40 : i));
    const results = await Promise.allSettled(calls.map((c) => storeCall(pool, c)));
    expect(results.map((r) => r.status).filter((s) => s === 'rejected')).toHaveLength(1);
    expect(results[17]!.status).toBe('rejected');
    results.forEach((result, i) => {
      if (i === 17 || result.status !== 'fulfilled') return;
      expect(result.value.inserted).toBe(true);
      expect(result.value.stored).toMatchObject({ cacheKey: calls[i]!.cacheKey, promptTokens: i });
      expect(result.value.stored.response.message.content).toBe(`answer ${i}`);
    });
    const stored = await query<{ n: string }>(
      db.url,
      "SELECT count(*) AS n FROM llm_calls WHERE model = 'c-batch'",
    );
    expect(Number(stored[0]!.n)).toBe(59);
    // The same answers again: every caller gets the stored row, none counts as inserted.
    const again = await Promise.all(calls.filter((_, i) => i !== 17).map((c) => storeCall(pool, c)));
    expect(again.every((r) => !r.inserted)).toBe(true);
  });

  it('sums tokens and calls per role of one run, counting cached reads zero times', async () => {
    const ledger = createModelClient({ databaseUrl: db.url });
    const runId = 'run-usage';
    const teacher = await ledger.chat(call('c-usage', 'teach', { runId, role: 'teacher' }));
    await ledger.chat(call('c-usage', 'teach', { runId, role: 'teacher' }));
    const judge1 = await ledger.chat({ ...call('c-usage', 'judge 1', { runId }), role: 'judge' });
    const judge2 = await ledger.chat({ ...call('c-usage', 'judge 2', { runId }), role: 'judge' });
    expect(await ledger.usageByRole(runId)).toEqual([
      {
        role: 'judge',
        calls: 2,
        promptTokens: judge1.usage.promptTokens + judge2.usage.promptTokens,
        completionTokens: judge1.usage.completionTokens + judge2.usage.completionTokens,
        attempts: 2,
        rejections: 0,
        costUsd: null, // the endpoint has no prices: unknown, not free
      },
      {
        role: 'teacher',
        calls: 1,
        promptTokens: teacher.usage.promptTokens,
        completionTokens: teacher.usage.completionTokens,
        attempts: 1,
        rejections: 0,
        costUsd: null,
      },
    ]);
    const [{ n }] = (await query<{ n: string }>(
      db.url,
      'SELECT count(*) AS n FROM llm_calls WHERE run_id = $1',
      [runId],
    )) as [{ n: string }];
    expect(Number(n)).toBe(3);
  });
});
