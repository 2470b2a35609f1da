import { spawn } from 'node:child_process';
import http from 'node:http';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createModelClient,
  ModelRequestRejectedError,
  ModelRetriesExhaustedError,
  type ModelCall,
  type ModelClient,
} from '../../activities/llm/index.js';
import { GATEWAY_COMPLETE_PATH } from '../../activities/llm/gateway-client.js';
import { startModelGateway, type ModelGateway } from '../../services/gateway/model-gateway.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { sampleValue, scrape } from '../../testkit/prometheus.js';
import { endpointOf, query, teacherCall } from '../unit/llm/fixtures.js';

const LLM_INDEX = new URL('../../activities/llm/index.ts', import.meta.url).pathname;

/**
 * The model gateway finishes and records a call whose worker died mid-call, so the retry pays
 * nothing; a worker calling the endpoint itself loses that answer and pays again.
 */
describe('the model gateway', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let gateway: ModelGateway;
  let viaGateway: ModelClient;

  beforeAll(async () => {
    db = await createTestDatabase('mw_llm_gateway');
    server = await startModelServer();
    gateway = await startModelGateway({ databaseUrl: db.url, port: 0 });
    viaGateway = createModelClient({ databaseUrl: db.url, gatewayUrl: gateway.url });
  });
  afterAll(async () => {
    await gateway?.close();
    await server?.close();
    await db?.drop();
  });
  beforeEach(() => {
    server.setLatency(0);
    server.resetStats();
  });

  const call = (model: string, text: string, extra: Partial<ModelCall> = {}) =>
    teacherCall(server, 'run-gateway', model, text, extra);

  /** A worker process that makes `call` and is SIGKILLed once the model server has the request. */
  async function killedMidCall(modelCall: ModelCall, gatewayUrl: string | null): Promise<void> {
    const script = `
      const { createModelClient } = await import(${JSON.stringify(LLM_INDEX)});
      await createModelClient({ databaseUrl: process.env.DB, gatewayUrl: process.env.GATEWAY || null })
        .chat(JSON.parse(process.env.CALL));
      console.log('answered before the kill');`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...process.env, DB: db.url, CALL: JSON.stringify(modelCall), GATEWAY: gatewayUrl ?? '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const deadline = Date.now() + 60_000;
    while (server.stats.inFlight === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(server.stats.inFlight).toBe(1);
    child.kill('SIGKILL');
    await exited;
    expect(stdout).toBe('');
  }

  it('records the answer of a worker killed mid-call, so its retry pays nothing', async () => {
    server.setLatency(1_500);
    const asked = call('g-kill', 'a long answer');
    await killedMidCall(asked, gateway.url);
    const retried = await viaGateway.chat(asked);
    expect(retried.cached).toBe(true);
    expect(server.stats.answered).toBe(1);
    expect(server.requestCount()).toBe(1);
    const rows = await query<{ n: number }>(
      db.url,
      'SELECT count(*)::int AS n FROM llm_calls WHERE cache_key = $1',
      [retried.cacheKey],
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('(without it, the same kill makes the retry pay again)', async () => {
    server.setLatency(1_500);
    const asked = call('g-kill-direct', 'a long answer');
    await killedMidCall(asked, null);
    const direct = createModelClient({ databaseUrl: db.url, gatewayUrl: null });
    const retried = await direct.chat(asked);
    expect(retried.cached).toBe(false);
    expect(server.requestCount()).toBe(2);
  });

  it('sends identical calls of many workers upstream once, and serves the stored answer after', async () => {
    server.setLatency(300);
    const workers = Array.from({ length: 8 }, () =>
      createModelClient({ databaseUrl: db.url, gatewayUrl: gateway.url }),
    );
    const results = await Promise.all(workers.map((w) => w.chat(call('g-share', 'same question'))));
    expect(server.requestCount()).toBe(1);
    expect(new Set(results.map((r) => JSON.stringify(r.message))).size).toBe(1);
    expect(results.filter((r) => !r.cached)).toHaveLength(1);
    const later = await viaGateway.chat(call('g-share', 'same question'));
    expect(later.cached).toBe(true);
    expect(server.requestCount()).toBe(1);
  });

  it('gives structured outputs and their repair call through the gateway', async () => {
    server.injectFaults({ kind: 'schema-invalid', content: '{"wrong": true}' });
    server.setScript([{ reply: { content: '{"answer": 4}' } }]);
    try {
      const result = await viaGateway.structured(
        call('g-structured', 'what is 2+2? answer as JSON'),
        z.object({ answer: z.number() }),
        'Answer',
      );
      expect(result).toMatchObject({ value: { answer: 4 }, repaired: true });
      expect(server.requestCount()).toBe(2);
    } finally {
      server.setScript(undefined);
    }
  });

  it('passes the model layer errors on with their types, so retry policies see them', async () => {
    server.injectFaults({ kind: 'bad-request' });
    await expect(viaGateway.chat(call('g-400', 'refused'))).rejects.toBeInstanceOf(ModelRequestRejectedError);
    server.injectFaults({ kind: 'server-error', status: 500 }, { kind: 'server-error', status: 500 });
    const exhausted = await viaGateway
      .chat({ ...call('g-500', 'fails'), endpoint: endpointOf(server, 'g-500', { maxRetries: 1 }) })
      .catch((e: unknown) => e);
    expect(exhausted).toBeInstanceOf(ModelRetriesExhaustedError);
    expect(exhausted).toMatchObject({ attempts: 2, lastStatus: 500 });
  });

  it('refuses a malformed request naming the field, and requests without the configured Authorization', async () => {
    const bad = await fetch(`${gateway.url}${GATEWAY_COMPLETE_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ call: { ...call('g-bad', 'x'), messages: [], sampling: { temperature: 9 } } }),
    });
    expect(bad.status).toBe(400);
    const text = await bad.text();
    expect(text).toContain('messages');
    expect(text).toContain('temperature');

    const locked = await startModelGateway({
      databaseUrl: db.url,
      port: 0,
      authorization: 'a-long-enough-secret',
    });
    try {
      const open = createModelClient({ databaseUrl: db.url, gatewayUrl: locked.url });
      await expect(open.chat(call('g-auth', 'x'))).rejects.toThrow(/401/);
      expect(server.requestCount()).toBe(0);
    } finally {
      await locked.close();
    }
  });

  it('serves its requests by route and outcome at its metrics address (MOCKWORLD_METRICS_ADDRESS)', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const metered = await startModelGateway({ databaseUrl: db.url, port: 0, metricsAddress: address });
    const requests = 'mockworld_service_request_duration_seconds_count';
    const count = (text: string, route: string, outcome: string) =>
      sampleValue(text, requests, { service: 'gateway', route, outcome });
    try {
      const before = await scrape(address);
      await createModelClient({ databaseUrl: db.url, gatewayUrl: metered.url }).chat(call('g-metrics', 'x'));
      const bad = await fetch(`${metered.url}${GATEWAY_COMPLETE_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(bad.status).toBe(400);
      expect((await fetch(`${metered.url}/v1/sessions/s-1`)).status).toBe(404);
      const after = await scrape(address);
      expect(count(after, GATEWAY_COMPLETE_PATH, 'ok') - count(before, GATEWAY_COMPLETE_PATH, 'ok')).toBe(1);
      expect(
        count(after, GATEWAY_COMPLETE_PATH, 'client_error') -
          count(before, GATEWAY_COMPLETE_PATH, 'client_error'),
      ).toBe(1);
      // Unknown paths share one label: a caller cannot grow the series.
      expect(count(after, 'other', 'client_error') - count(before, 'other', 'client_error')).toBe(1);
      expect(after).not.toContain('/v1/sessions/s-1');
      // The model calls it paid for are in the same registry.
      expect(
        sampleValue(after, 'mockworld_model_calls_total', { role: 'teacher', source: 'paid' }) -
          sampleValue(before, 'mockworld_model_calls_total', { role: 'teacher', source: 'paid' }),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await metered.close();
    }
    await expect(scrape(address)).rejects.toThrow(); // closed with the gateway
  });

  it('says how to start the gateway when it is not there', async () => {
    const gone = createModelClient({ databaseUrl: db.url, gatewayUrl: 'http://127.0.0.1:9/' });
    await expect(gone.chat(call('g-gone', 'x'))).rejects.toThrow(/mockworld gateway/);
  });
  it('sends no setting of its own as an API key, and answers no browser', async () => {
    const post = (body: unknown) =>
      fetch(`${gateway.url}${GATEWAY_COMPLETE_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const apiKeyEnv of ['DATABASE_URL', 'MOCKWORLD_MODEL_GATEWAY_AUTH', 'PGPASSWORD']) {
      const asked = {
        call: { ...call('g-exfiltrate', 'x'), endpoint: endpointOf(server, 'g-x', { apiKeyEnv }) },
      };
      const refused = await post(asked);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain(`${apiKeyEnv} is not an API key variable`);
    }
    // fetch sets Origin itself: ask as a browser would, through node:http.
    const fromPage = await new Promise<number>((resolve, reject) => {
      const request = http.request(
        `${gateway.url}${GATEWAY_COMPLETE_PATH}`,
        { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://evil.example' } },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end(JSON.stringify({ call: call('g-browser', 'x') }));
    });
    expect(fromPage).toBe(403);
    const plain = await fetch(`${gateway.url}${GATEWAY_COMPLETE_PATH}`, {
      method: 'POST',
      body: JSON.stringify({ call: call('g-text', 'x') }), // text/plain: a form or a page could send it
    });
    expect(plain.status).toBe(415);
    expect(server.requestCount()).toBe(0);
  });

  it('stores the calls in flight before it stops, and takes no new ones meanwhile', async () => {
    const draining = await startModelGateway({ databaseUrl: db.url, port: 0 });
    const client = createModelClient({ databaseUrl: db.url, gatewayUrl: draining.url });
    server.setLatency(800);
    const asked = client.chat(call('g-drain', 'answer before you stop')).catch((e: unknown) => e);
    while (draining.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const cut = await draining.drain(30_000);
    expect(cut).toBe(0);
    expect(await asked).toMatchObject({ cached: false });
    const again = await viaGateway.chat(call('g-drain', 'answer before you stop'));
    expect(again.cached).toBe(true);
    expect(server.requestCount()).toBe(1);
  });
});
