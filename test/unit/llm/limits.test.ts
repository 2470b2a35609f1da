import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import type { ModelEndpointInput } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { endpointOf, sampling, system } from './fixtures.js';

/** Most arrivals in any window of `windowMs`, from sorted arrival times. */
function busiestWindow(times: number[], windowMs: number, weights: number[] = times.map(() => 1)): number {
  let best = 0;
  let sum = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    sum += weights[end]!;
    while (times[end]! - times[start]! >= windowMs) sum -= weights[start++]!;
    best = Math.max(best, sum);
  }
  return best;
}

describe('per-endpoint limits under 200 concurrent callers', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    db = await createTestDatabase('mw_llm_limits');
    server = await startModelServer();
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 20 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.setLatency(0);
    server.setScript(undefined);
    server.resetStats();
  });

  const callers = (n: number, model: string, limits: Partial<ModelEndpointInput>) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        models.chat({
          endpoint: endpointOf(server, model, limits),
          messages: [system('sim'), { role: 'user', content: `distinct request ${i}` }],
          sampling,
        }),
      ),
    );

  it('never has more than maxConcurrency requests in flight at the server', async () => {
    server.setLatency(20);
    await callers(200, 'l-concurrency', { maxConcurrency: 8 });
    expect(server.requestCount()).toBe(200);
    expect(server.stats.maxInFlight).toBeLessThanOrEqual(8);
    expect(server.stats.maxInFlight).toBeGreaterThanOrEqual(4); // the cap is used, not undercut
  });

  it('spreads requests to the requests-per-minute cap (2400/min = 40/s, one second of burst)', async () => {
    const started = Date.now();
    await callers(200, 'l-rpm', { requestsPerMinute: 2400, maxConcurrency: 256 });
    const elapsed = Date.now() - started;
    const arrivals = server.requests.map((r) => r.at).sort((a, b) => a - b);
    // A bucket of 40 refilled at 40/s: 200 requests need at least (200 - 40) / 40 = 4 s.
    expect(elapsed).toBeGreaterThanOrEqual(3800);
    // In any window: the burst plus the window's refill. Arrivals are timed at the server, where
    // a busy event loop (2 shared cores in CI) can bunch releases that were spread out; the slack
    // covers that bunching while any real over-admission (>= 2x) still fails.
    expect(busiestWindow(arrivals, 1000)).toBeLessThanOrEqual(80 + 20);
    expect(busiestWindow(arrivals, 3000)).toBeLessThanOrEqual(40 + 120 + 20);
  });

  it('spreads tokens to the tokens-per-minute cap, charging real usage', async () => {
    server.setScript(() => 'y'.repeat(400)); // 100 completion tokens each
    const started = Date.now();
    const results = await callers(30, 'l-tpm', { tokensPerMinute: 60_000, maxConcurrency: 256 });
    const elapsed = Date.now() - started;
    const perCall = results.map((r) => r.usage.promptTokens + r.usage.completionTokens);
    const total = perCall.reduce((a, b) => a + b, 0);
    // 1000 tokens/s with a 1000-token bucket: (total - 1000) / 1000 seconds at least.
    expect(elapsed).toBeGreaterThanOrEqual(((total - 1000) / 1000) * 1000 * 0.9);
    // Match each arrival to its caller's usage through the distinct request text.
    const tokensAt = server.requests.map((r) => {
      const caller = Number(/distinct request (\d+)/.exec(String(r.body.messages.at(-1)?.content))?.[1]);
      return { at: r.at, tokens: perCall[caller]! };
    });
    expect(
      busiestWindow(
        tokensAt.map((t) => t.at),
        1000,
        tokensAt.map((t) => t.tokens),
      ),
    ).toBeLessThanOrEqual(2000 + 500); // burst + refill, with the same bunching slack as above
  });

  it('holds every caller of the endpoint for the Retry-After of a 429', async () => {
    server.injectFaults({ kind: 'rate-limit', retryAfterSeconds: 1 });
    await callers(5, 'l-pause', { maxConcurrency: 1 });
    const [limited, ...rest] = server.requests;
    expect(limited?.fault).toBe('rate-limit');
    expect(rest).toHaveLength(5);
    for (const request of rest) expect(request.at - limited!.at).toBeGreaterThanOrEqual(950);
  });
});
