/**
 * The viewer's boundaries, without a browser: loopback by default, another address only with a
 * token (and then every request needs it), read-only at the database, and no environment value in
 * what it serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunActivities } from '../../../activities/runs.js';
import { startViewer, type Viewer } from '../../../services/viewer/server.js';
import { ViewerAccessError } from '../../../services/viewer/access.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';
import { freePort } from '../../../testkit/ports.js';
import { sampleValue, scrape } from '../../../testkit/prometheus.js';

const ui = { url: 'http://localhost:8233', namespace: 'default' };
const TOKEN = 'a-viewer-token-of-some-length';

describe('the viewer boundaries', () => {
  let db: TestDatabase;
  let open: Viewer;
  let guarded: Viewer;
  let metricsAddress: string;
  const secret = `sk-planted-${Date.now()}`;

  beforeAll(async () => {
    db = await createTestDatabase();
    process.env.VIEWER_TEST_API_KEY = secret;
    // A spec names its key variable; the viewer shows the name, never the value.
    await createRunActivities(db.url).recordRunStart({
      runId: 'run-with-key',
      kind: 'Smoke',
      spec: {
        kind: 'Smoke',
        endpoint: { baseUrl: 'http://127.0.0.1:1/v1', model: 'm', apiKeyEnv: 'VIEWER_TEST_API_KEY' },
      },
    });
    metricsAddress = `127.0.0.1:${await freePort()}`;
    open = await startViewer({ databaseUrl: db.url, port: 0, ui, metricsAddress });
    guarded = await startViewer({ databaseUrl: db.url, port: 0, host: '0.0.0.0', token: TOKEN, ui });
  });
  afterAll(async () => {
    delete process.env.VIEWER_TEST_API_KEY;
    await open?.close();
    await guarded?.close();
    await db?.drop();
  });

  it('binds to 127.0.0.1 by default and refuses another address without a token', async () => {
    expect(new URL(open.url).hostname).toBe('127.0.0.1');
    await expect(startViewer({ databaseUrl: db.url, port: 0, host: '0.0.0.0', ui })).rejects.toThrow(
      ViewerAccessError,
    );
  });

  it('on another address, serves only requests that carry the token (query once, then the cookie)', async () => {
    const base = `http://127.0.0.1:${guarded.port}`;
    expect((await fetch(`${base}/`)).status).toBe(401);
    expect((await fetch(`${base}/?token=wrong-token-wrong-token`)).status).toBe(401);
    expect((await fetch(`${base}/`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    const first = await fetch(`${base}/?token=${TOKEN}`);
    expect(first.status).toBe(200);
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(
      (await fetch(`${base}/runs/run-with-key`, { headers: { cookie: cookie.split(';')[0]! } })).status,
    ).toBe(200);
  });

  it("answers a cluster's probe on /health without the token, and serves nothing else there", async () => {
    const base = `http://127.0.0.1:${guarded.port}`;
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('ok');
    expect((await fetch(`${base}/health/../runs/run-with-key`)).status).toBe(401);
    expect((await fetch(`${base}/health?token=wrong`)).headers.get('set-cookie')).toBeNull();
  });

  it('is read-only: no write method, and its database sessions refuse writes', async () => {
    expect((await fetch(`${open.url}/runs/run-with-key`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${open.url}/runs/run-with-key`, { method: 'DELETE' })).status).toBe(405);
    const { readOnlyPool } = await import('../../../services/viewer/db.js');
    const pool = readOnlyPool(db.url);
    await expect(pool.query(`UPDATE runs SET status = 'failed'`)).rejects.toThrow(/read-only transaction/);
    await pool.end();
    expect((await query(db.url, 'SELECT status FROM runs'))[0]).toEqual({ status: 'running' });
  });

  it('serves no environment value, only the name of the key variable', async () => {
    const pages = await Promise.all(
      ['/', '/runs/run-with-key'].map(async (p) => (await fetch(`${open.url}${p}`)).text()),
    );
    for (const text of pages) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(db.url);
    }
    expect(pages[1]).toContain('VIEWER_TEST_API_KEY');
  });

  it('shows tokens and cost per role and per run, and why a run paused itself', async () => {
    const call = (key: string, role: string, cost: number | null) =>
      query(
        db.url,
        `INSERT INTO llm_calls (cache_key, endpoint, model, request_hash, sample_index, policy_version, run_id, role,
           response, prompt_tokens, completion_tokens, latency_ms, upstream_attempts, cost_usd)
         VALUES ($1, 'http://m/v1', 'm', $1, 0, 'base', 'run-with-key', $2, '{}', 1000, 500, 1, 1, $3)`,
        [key, role, cost],
      );
    await call('k1', 'teacher', 0.25);
    await call('k2', 'teacher', 0.5);
    await call('k3', 'judge', null);
    await query(
      db.url,
      `UPDATE runs SET status = 'paused', pause_reason = 'budget reached: spent $0.75 of $0.50' WHERE run_id = 'run-with-key'`,
    );
    const runs = await (await fetch(`${open.url}/`)).text();
    expect(runs).toMatch(/<td>\$0\.75<\/td>/);
    expect(runs).toContain('budget reached: spent $0.75 of $0.50');
    const page = await (await fetch(`${open.url}/runs/run-with-key`)).text();
    expect(page).toMatch(
      /<td>teacher<\/td>\s*<td>2<\/td>\s*<td>0<\/td>\s*<td>2000<\/td>\s*<td>1000<\/td>\s*<td>\$0\.75<\/td>/,
    );
    expect(page).toMatch(
      /<td>judge<\/td>\s*<td>1<\/td>\s*<td>0<\/td>\s*<td>1000<\/td>\s*<td>500<\/td>\s*<td>—<\/td>/,
    );
    expect(page).toMatch(
      /<td><b>run<\/b><\/td>\s*<td>3<\/td>\s*<td>0<\/td>\s*<td>3000<\/td>\s*<td>1500<\/td>\s*<td>\$0\.75<\/td>/,
    );
    expect(page).toContain('Paused by itself: budget reached');
  });

  it('serves the chart libraries from the installed packages and forbids scripts from elsewhere', async () => {
    for (const asset of ['vega.min.js', 'vega-lite.min.js', 'vega-embed.min.js', 'viewer.js']) {
      const response = await fetch(`${open.url}/assets/${asset}`);
      expect(response.status).toBe(200);
      expect((await response.text()).length).toBeGreaterThan(100);
    }
    const response = await fetch(`${open.url}/`);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await fetch(`${open.url}/assets/..%2Fpackage.json`)).status).toBe(404);
  });

  it('serves its requests by page and outcome at its metrics address (MOCKWORLD_METRICS_ADDRESS)', async () => {
    const count = (text: string, route: string, outcome: string) =>
      sampleValue(text, 'mockworld_service_request_duration_seconds_count', {
        service: 'viewer',
        route,
        outcome,
      });
    const before = await scrape(metricsAddress);
    expect((await fetch(`${open.url}/`)).status).toBe(200);
    expect((await fetch(`${open.url}/runs/run-with-key`)).status).toBe(200);
    expect((await fetch(`${open.url}/tasks/no-such-task`)).status).toBe(404);
    const after = await scrape(metricsAddress);
    const delta = (route: string, outcome: string) =>
      count(after, route, outcome) - count(before, route, outcome);
    expect(delta('runs-list', 'ok')).toBe(1);
    expect(delta('run', 'ok')).toBe(1);
    expect(delta('tasks', 'client_error')).toBe(1);
    expect(after).not.toContain('run-with-key'); // ids stay out of the labels
  });
});
