import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dispatchOnce, MAX_SEND_FAILURES } from '../../../activities/llm/batch/dispatcher.js';
import { createModelClient, type ModelCall, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import { BatchWindowSchema, type BatchWindow } from '../../../schemas/model-batch.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { endpointOf, query, sampling, system } from './fixtures.js';

/**
 * Batch mode against the test server's Batch API: requests gathered into jobs by the window,
 * answered into the ledger at the batch price, and every provider fault (expired job, failed
 * lines, a job that never completes, an output line written twice) ends with each request
 * answered and none billed twice.
 */
describe('model calls in provider batch jobs', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    db = await createTestDatabase('mw_llm_batch');
    server = await startModelServer({
      script: (r) => `answer to ${String(r.body.messages.at(-1)?.content)}`,
    });
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 20 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => server.resetStats());

  const window = (overrides: Partial<BatchWindow> = {}): BatchWindow =>
    BatchWindowSchema.parse({ maxWaitSeconds: 0.2, pollSeconds: 0.05, ...overrides });

  const judgeCall = (
    model: string,
    text: string,
    batch: BatchWindow | undefined,
    runId = 'run-batch',
  ): ModelCall => ({
    endpoint: endpointOf(server, model, { prices: { inputPerMillion: 2, outputPerMillion: 8 } }),
    messages: [system('judge'), { role: 'user', content: text }],
    sampling,
    runId,
    role: 'judge',
    batch,
  });

  /** Ledger rows of one model name, with the job that answered each. */
  const ledger = (model: string) =>
    query<{ cache_key: string; batch_job_id: string | null; cost_usd: number; upstream_attempts: number }>(
      db.url,
      'SELECT cache_key, batch_job_id, cost_usd, upstream_attempts FROM llm_calls WHERE model = $1',
      [model],
    );

  const billedTwice = () => Object.values(server.batches.stats.billedByCustomId).filter((n) => n > 1).length;

  it('gathers concurrent calls into one job, answers them as online would, at half the price', async () => {
    const texts = Array.from({ length: 12 }, (_, i) => `question ${i}`);
    const jobsBefore = server.batches.stats.jobsCreated;
    const batched = await Promise.all(texts.map((t) => models.chat(judgeCall('b-one-job', t, window()))));
    expect(server.batches.stats.jobsCreated - jobsBefore).toBe(1);
    expect(server.stats.byRole.judge).toBe(12); // the lines, answered by the same script
    const online = await Promise.all(texts.map((t) => models.chat(judgeCall('b-online', t, undefined))));
    expect(batched.map((r) => r.message.content)).toEqual(online.map((r) => r.message.content));
    const [batchRows, onlineRows] = [await ledger('b-one-job'), await ledger('b-online')];
    expect(batchRows).toHaveLength(12);
    expect(new Set(batchRows.map((r) => r.batch_job_id)).size).toBe(1);
    const cost = (rows: typeof batchRows) => rows.reduce((sum, r) => sum + r.cost_usd, 0);
    expect(cost(batchRows)).toBeCloseTo(cost(onlineRows) / 2, 12);
    expect(onlineRows.every((r) => r.batch_job_id === null)).toBe(true);
  });

  it('a call answered before (online or batch) is served from the ledger with no job', async () => {
    await models.chat(judgeCall('b-reuse', 'once', undefined));
    const jobsBefore = server.batches.stats.jobsCreated;
    const again = await models.chat(judgeCall('b-reuse', 'once', window()));
    expect(again.cached).toBe(true);
    expect(server.batches.stats.jobsCreated).toBe(jobsBefore);
  });

  it('sends a job as soon as maxRequests wait, without waiting the window out', async () => {
    const w = window({ maxWaitSeconds: 3600, maxRequests: 5 });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => models.chat(judgeCall('b-full', `full ${i}`, w))),
    );
    expect(answers).toHaveLength(10);
    const jobs = new Set((await ledger('b-full')).map((r) => r.batch_job_id));
    expect(jobs.size).toBe(2);
  });

  it('an expired job: its answered half is kept, the rest is sent again in the next job, nothing billed twice', async () => {
    server.batches.injectFaults({ kind: 'expire', role: 'judge', answeredFraction: 0.5 });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => models.chat(judgeCall('b-expire', `expire ${i}`, window()))),
    );
    expect(answers.every((a) => a.message.content?.startsWith('answer to'))).toBe(true);
    const rows = await ledger('b-expire');
    expect(rows).toHaveLength(8);
    expect(new Set(rows.map((r) => r.batch_job_id)).size).toBe(2);
    expect(rows.filter((r) => r.upstream_attempts === 2)).toHaveLength(4); // sent in two jobs
    expect(billedTwice()).toBe(0);
    const jobs = await query<{ provider_status: string; answered: number; unanswered: number }>(
      db.url,
      `SELECT j.provider_status, j.answered, j.unanswered FROM llm_batch_jobs j
        WHERE j.job_id IN (SELECT batch_job_id FROM llm_calls WHERE model = 'b-expire') ORDER BY j.created_at`,
    );
    expect(jobs).toEqual([
      { provider_status: 'expired', answered: 4, unanswered: 4 },
      { provider_status: 'completed', answered: 4, unanswered: 0 },
    ]);
  });

  it('lines failed in maxSubmissions jobs go online, with the reason recorded', async () => {
    const w = window({ maxSubmissions: 1 });
    server.batches.injectFaults({ kind: 'fail-lines', role: 'judge', failedFraction: 0.5 });
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => models.chat(judgeCall('b-fail', `fail ${i}`, w))),
    );
    expect(answers).toHaveLength(4);
    const rows = await ledger('b-fail');
    expect(rows.filter((r) => r.batch_job_id === null)).toHaveLength(2); // answered online
    expect(server.stats.answeredByRole.judge).toBe(2);
    const lines = await query<{ state: string; last_error: string }>(
      db.url,
      `SELECT state, last_error FROM llm_batch_lines WHERE state = 'online'
         AND cache_key IN (SELECT cache_key FROM llm_calls WHERE model = 'b-fail')`,
    );
    expect(lines).toHaveLength(2);
    expect(lines[0]!.last_error).toMatch(/status 500.*injected line failure/);
    expect(billedTwice()).toBe(0);
  });

  it('a job that never completes is cancelled after maxJobMinutes and its lines are sent again', async () => {
    const w = window({ maxJobMinutes: 0.01 }); // 0.6 s
    server.batches.injectFaults({ kind: 'never-complete', role: 'judge' });
    const answers = await Promise.all(
      Array.from({ length: 3 }, (_, i) => models.chat(judgeCall('b-stuck', `stuck ${i}`, w))),
    );
    expect(answers).toHaveLength(3);
    expect(server.batches.stats.jobsCancelled).toBeGreaterThanOrEqual(1);
    expect(new Set((await ledger('b-stuck')).map((r) => r.batch_job_id)).size).toBe(1);
    expect(billedTwice()).toBe(0);
  });

  it('a job the provider refuses is given up after its tries and its requests sent in the next job', async () => {
    server.batches.injectFaults({ kind: 'refuse-create', role: 'judge', times: MAX_SEND_FAILURES });
    const answers = await Promise.all(
      Array.from({ length: 3 }, (_, i) => models.chat(judgeCall('b-refused', `refused ${i}`, window()))),
    );
    expect(answers.every((a) => a.message.content?.startsWith('answer to'))).toBe(true);
    const refused = await query<{ provider_status: string; failures: number; unanswered: number }>(
      db.url,
      "SELECT provider_status, failures, unanswered FROM llm_batch_jobs WHERE last_error LIKE '%input file was refused%'",
    );
    expect(refused).toEqual([{ provider_status: 'failed', failures: MAX_SEND_FAILURES, unanswered: 3 }]);
    const lines = await query<{ submissions: number; last_error: string }>(
      db.url,
      `SELECT submissions, last_error FROM llm_batch_lines WHERE cache_key IN (SELECT cache_key FROM llm_calls WHERE model = 'b-refused')`,
    );
    expect(lines.map((l) => l.submissions)).toEqual([2, 2, 2]);
    expect(lines[0]!.last_error).toMatch(/not sent after 5 tries: 400 injected: the input file was refused/);
    expect(billedTwice()).toBe(0);
  });

  it('an output line written twice is stored and billed once', async () => {
    server.batches.injectFaults({ kind: 'duplicate-output', role: 'judge' });
    await Promise.all(
      Array.from({ length: 3 }, (_, i) => models.chat(judgeCall('b-dup', `dup ${i}`, window()))),
    );
    expect(await ledger('b-dup')).toHaveLength(3);
    expect(billedTwice()).toBe(0);
  });

  it('a job created by a process that died before recording it is found by its metadata, not created again', async () => {
    const pool = getPool(db.url);
    // Two requests queued by a caller that went away before anything ran them (its activity
    // will retry) before its first poll, so only the dispatch below forms and sends their job.
    const w = window({ maxWaitSeconds: 0.1, pollSeconds: 0.5 });
    const gone = new AbortController();
    const pending = [0, 1].map((i) =>
      models.chat({ ...judgeCall('b-lost', `lost ${i}`, w), signal: gone.signal }).catch(() => 'aborted'),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    gone.abort();
    expect(await Promise.all(pending)).toEqual(['aborted', 'aborted']);
    // Form and send the job, then forget that it was sent, as a crash before the commit would.
    await dispatchOnce(pool);
    const jobsCreated = server.batches.stats.jobsCreated;
    await query(
      db.url,
      `UPDATE llm_batch_jobs SET state = 'formed', provider_batch_id = NULL, input_file_id = NULL
        WHERE job_id IN (SELECT job_id FROM llm_batch_lines WHERE body->'messages'->1->>'content' LIKE 'lost %')`,
    );
    const retried = await Promise.all([0, 1].map((i) => models.chat(judgeCall('b-lost', `lost ${i}`, w))));
    expect(retried.map((r) => r.message.content)).toEqual(['answer to lost 0', 'answer to lost 1']);
    expect(server.batches.stats.jobsCreated).toBe(jobsCreated);
    expect(billedTwice()).toBe(0);
  });
});
