import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { EndpointLimiter } from '../../../activities/llm/rate-limiter.js';
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

  it('sends every call through the endpoint limiter and its buckets (all 200 served)', async () => {
    await callers(200, 'l-rpm', { requestsPerMinute: 2400, maxConcurrency: 256 });
    expect(server.requestCount()).toBe(200);
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

/**
 * The buckets' pacing on the limiter's own clock (fake timers): admission times are exact, so the
 * windows are checked without slack and without depending on how busy the machine is.
 */
describe('endpoint limiter pacing, on a fake clock', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  /** Admits `n` requests of `estimate` tokens; each releases at once with `actual` tokens used. */
  async function admissions(limiter: EndpointLimiter, n: number, estimate = 1, actual?: number) {
    const at: number[] = [];
    for (let i = 0; i < n; i++) {
      void limiter.acquire(estimate).then((permit) => {
        at.push(Date.now());
        permit.release(actual);
      });
    }
    await vi.advanceTimersByTimeAsync(60_000);
    return at;
  }

  it('spreads requests to the requests-per-minute cap (2400/min = 40/s, one second of burst)', async () => {
    const at = await admissions(new EndpointLimiter({ maxConcurrency: 256, requestsPerMinute: 2400 }), 200);
    expect(at).toHaveLength(200);
    expect(at.filter((t) => t === 0)).toHaveLength(40); // the burst
    // A bucket of 40 refilled at 40/s: the other 160 one every 25 ms, the last at 4 s.
    expect(at.at(-1)).toBe(4000);
    expect(busiestWindow(at, 1000)).toBeLessThanOrEqual(40 + 40);
    expect(busiestWindow(at, 3000)).toBeLessThanOrEqual(40 + 120);
  });

  it('spreads tokens to the tokens-per-minute cap, charging real usage', async () => {
    // 1000 tokens/s with a 1000-token bucket; each call estimated at 200 tokens and using 100.
    const limiter = new EndpointLimiter({ maxConcurrency: 256, tokensPerMinute: 60_000 });
    const at = await admissions(limiter, 30, 200, 100);
    expect(at).toHaveLength(30);
    // Charged 200 at admission and 100 given back at release: 100 per call once paced, so the
    // 25 calls after the burst of 5 need 2.5 s, not the 5 s the estimates alone would take.
    expect(at.at(-1)).toBeLessThanOrEqual(2600);
    expect(at.at(-1)).toBeGreaterThanOrEqual(2000);
    expect(
      busiestWindow(
        at,
        1000,
        at.map(() => 100),
      ),
    ).toBeLessThanOrEqual(1000 + 1000);
  });
});
