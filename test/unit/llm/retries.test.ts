import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createModelClient,
  ModelRequestRejectedError,
  ModelRetriesExhaustedError,
  type ModelClient,
} from '../../../activities/llm/index.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { callRows, endpointOf, query, sampling, system } from './fixtures.js';

describe('model calls under upstream faults', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    db = await createTestDatabase('mw_llm_retries');
    server = await startModelServer();
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 20, maxDelayMs: 200 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.setScript(undefined);
    server.setRandomFaults(undefined);
    server.resetStats();
  });

  const ask = (model: string, text: string, overrides = {}) =>
    models.chat({
      endpoint: endpointOf(server, model, overrides),
      messages: [system('worker'), { role: 'user', content: text }],
      sampling,
      runId: 'run-retries',
      role: 'worker',
    });

  it('waits at least the Retry-After seconds of a 429 before retrying, and succeeds', async () => {
    server.injectFaults({ kind: 'rate-limit', retryAfterSeconds: 1 });
    const started = Date.now();
    const result = await ask('m-429', 'rate limited once');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(result.message.content).toBe('echo: rate limited once');
    expect(result.attempts).toBe(2);
    expect(server.requestCount()).toBe(2);
    const [row] = await callRows(db.url, result.cacheKey);
    expect(row?.upstream_attempts).toBe(2);
  });

  it('honours retry-after-ms when the endpoint sends it', async () => {
    server.injectFaults({ kind: 'rate-limit', retryAfterMs: 400, retryAfterSeconds: 600 });
    const started = Date.now();
    await ask('m-429-ms', 'rate limited in ms');
    const waited = Date.now() - started;
    // Waited, and by the ms header: the 600 s of retry-after would run past the test's timeout.
    expect(waited).toBeGreaterThanOrEqual(380);
  });

  it('retries a 500 and a 503', async () => {
    server.injectFaults({ kind: 'server-error' }, { kind: 'server-error', status: 503 });
    const result = await ask('m-500', 'server errors twice');
    expect(result.attempts).toBe(3);
    expect(server.stats.faults['server-error']).toBe(2);
  });

  it('abandons a request that hangs past the endpoint timeout and retries it', async () => {
    server.injectFaults({ kind: 'hang' });
    const started = Date.now();
    const result = await ask('m-hang', 'hangs once', { timeoutMs: 300 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(result.attempts).toBe(2);
    expect(server.stats.inFlight).toBe(0); // the hung request's connection was closed by the client
  });

  it('retries a body cut off mid-JSON and a complete body that is not JSON', async () => {
    server.injectFaults({ kind: 'truncated-body' }, { kind: 'malformed-body' });
    const result = await ask('m-body', 'broken bodies');
    expect(result.attempts).toBe(3);
    expect(result.message.content).toBe('echo: broken bodies');
  });

  it('fails a 400 at once with ModelRequestRejectedError and stores nothing', async () => {
    server.injectFaults({ kind: 'bad-request' });
    const error = await ask('m-400', 'bad request').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelRequestRejectedError);
    expect(error).toMatchObject({ status: 400, model: 'm-400' });
    expect(server.requestCount()).toBe(1);
    expect(await query(db.url, "SELECT 1 FROM llm_calls WHERE model = 'm-400'")).toHaveLength(0);
  });

  it('gives up after maxRetries naming the endpoint, the attempts and the last status', async () => {
    server.injectFaults(...Array.from({ length: 3 }, () => ({ kind: 'server-error' as const, status: 503 })));
    const error = await ask('m-exhausted', 'always failing', { maxRetries: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelRetriesExhaustedError);
    expect(error).toMatchObject({ attempts: 3, lastStatus: 503, endpoint: server.url, model: 'm-exhausted' });
    expect((error as Error).message).toContain(server.url);
    expect(server.requestCount()).toBe(3);
    expect(await query(db.url, "SELECT 1 FROM llm_calls WHERE model = 'm-exhausted'")).toHaveLength(0);
  });

  it('stops at once when the caller aborts, rejecting with the abort reason', async () => {
    server.injectFaults({ kind: 'hang' });
    const controller = new AbortController();
    const reason = new Error('activity cancelled');
    setTimeout(() => controller.abort(reason), 100);
    const error = await models
      .chat({
        endpoint: endpointOf(server, 'm-abort'),
        messages: [{ role: 'user', content: 'cancel me' }],
        sampling,
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    expect(error).toBe(reason); // the abort ended it: the request timeout would reject otherwise
    expect(server.requestCount()).toBe(1);
  });

  it('absorbs seeded random faults with retries and stores every answer once', async () => {
    server.setRandomFaults({
      probability: 0.3,
      kinds: ['server-error', 'truncated-body', 'malformed-body'],
      seed: 7,
    });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => ask('m-random', `random ${i}`, { maxRetries: 10 })),
    );
    const faults = Object.values(server.stats.faults).reduce((a, b) => a + (b ?? 0), 0);
    expect(faults).toBeGreaterThan(0);
    expect(server.requestCount()).toBe(30 + faults);
    expect(results.reduce((sum, r) => sum + r.attempts, 0)).toBe(30 + faults);
    const [{ count }] = (await query<{ count: string }>(
      db.url,
      "SELECT count(*) FROM llm_calls WHERE model = 'm-random'",
    )) as [{ count: string }];
    expect(Number(count)).toBe(30);
  });

  it('passes tool calls through untouched', async () => {
    server.setScript([
      {
        role: 'agent',
        reply: { toolCalls: [{ name: 'search_flights', arguments: { from: 'SFO', to: 'JFK' } }] },
      },
    ]);
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'search_flights',
          parameters: { type: 'object', properties: { from: { type: 'string' }, to: { type: 'string' } } },
        },
      },
    ];
    const result = await models.chat({
      endpoint: endpointOf(server, 'm-tools'),
      messages: [system('agent'), { role: 'user', content: 'book me a flight' }],
      tools,
      sampling,
    });
    expect(result.finishReason).toBe('tool_calls');
    expect(result.message.content).toBeNull();
    expect(result.message.tool_calls).toEqual([
      {
        id: 'call_0_0',
        type: 'function',
        function: { name: 'search_flights', arguments: '{"from":"SFO","to":"JFK"}' },
      },
    ]);
    expect(server.requests[0]?.body.tools).toEqual(tools);
  });

  it('sends the key from the named environment variable and never stores it', async () => {
    const secret = 'sk-test-4f9c2a-never-store-me';
    process.env.MW_TEST_MODEL_KEY = secret;
    try {
      await ask('m-key', 'with a key', { apiKeyEnv: 'MW_TEST_MODEL_KEY' });
      expect(server.requests[0]?.authorization).toBe(`Bearer ${secret}`);
      const rows = await query<{ row: string }>(
        db.url,
        'SELECT row_to_json(c)::text AS row FROM llm_calls c',
      );
      expect(rows.length).toBeGreaterThan(0);
      for (const { row } of rows) expect(row).not.toContain(secret);
      const rejections = await query<{ row: string }>(
        db.url,
        'SELECT row_to_json(r)::text AS row FROM llm_rejections r',
      );
      for (const { row } of rejections) expect(row).not.toContain(secret);
    } finally {
      delete process.env.MW_TEST_MODEL_KEY;
    }
  });

  it('sends a placeholder key when the endpoint names no key variable', async () => {
    await ask('m-nokey', 'without a key');
    expect(server.requests[0]?.authorization).toBe('Bearer unused');
  });
});
