import type { Batch } from 'openai/resources/batches';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import type OpenAI from 'openai';
import type pg from 'pg';
import { inTransaction } from '../../store/db.js';
import { modelCalls, modelCost, modelTokens, roleLabel } from '../../telemetry/metrics.js';
import { boundedAnswer } from '../answer-bounds.js';
import { storeCall, type NewCall } from '../call-store.js';
import { pricedTokens } from '../cost.js';
import {
  claimJob,
  closeJob,
  dueGroups,
  formJob,
  jobLines,
  markFailed,
  markPolled,
  markSubmitted,
  sentLines,
  type JobRow,
  type SentLine,
} from './ledger.js';
import {
  createJobBatch,
  downloadResults,
  findJobBatch,
  FINAL_STATES,
  providerClient,
  type ResultLine,
} from './provider.js';

/**
 * One pass of the batch machinery over the whole ledger, by whichever process runs it: forms the
 * jobs that are due, sends the formed ones, polls the running ones and takes in the finished ones.
 * Each job is locked while it is handled (other processes skip it), and each step can be repeated
 * after a crash: a job sent but not recorded is found by its metadata, a finished job taken in
 * twice stores each answer once.
 */
export async function dispatchOnce(pool: pg.Pool): Promise<void> {
  await formDueJobs(pool);
  // Each job at most once per pass, however short its poll interval.
  const handled: string[] = [];
  const next = (state: 'formed' | 'submitted', step: (client: pg.PoolClient, job: JobRow) => Promise<void>) =>
    inTransaction(pool, async (client) => {
      const job = await claimJob(client, state, handled);
      if (!job) return false;
      handled.push(job.jobId);
      await step(client, job);
      return true;
    });
  while (await next('formed', submitOne)) {
    /* every formed job */
  }
  while (await next('submitted', (client, job) => pollOne(pool, client, job))) {
    /* every job due for a poll */
  }
}

/** Forms jobs while any group is due (a group due by count keeps its partial remainder queued). */
async function formDueJobs(pool: pg.Pool): Promise<void> {
  for (let round = 0; round < 100; round++) {
    const due = await dueGroups(pool);
    if (due.length === 0) return;
    const formed = await Promise.all(due.map((g) => formJob(pool, g.groupKey, g.maxRequests)));
    if (formed.every((id) => id === undefined)) return;
  }
}

/** Failed sends of one job after which it is given up, its requests queued again (or online). */
export const MAX_SEND_FAILURES = 5;

async function submitOne(client: pg.PoolClient, job: JobRow): Promise<void> {
  const provider = providerClient(job.settings.endpoint);
  try {
    const batch =
      (await findJobBatch(provider, job.jobId, job.createdAtSeconds)) ??
      (await createJobBatch(provider, job.jobId, job.settings.role, await jobLines(client, job.jobId)));
    await markSubmitted(client, job.jobId, batch.id, batch.input_file_id, batch.status);
  } catch (error) {
    await giveUpOrRetry(client, provider, job, error);
  }
}

/**
 * A send that failed is tried again after the poll interval; after {@link MAX_SEND_FAILURES} the
 * job is closed and its requests go back to the queue (or online) — only once the provider
 * confirms it holds no batch of the job, so a batch created by a send whose answer was lost is
 * never paid for a second time.
 */
async function giveUpOrRetry(
  client: pg.PoolClient,
  provider: OpenAI,
  job: JobRow,
  error: unknown,
): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  await markFailed(client, job.jobId, message);
  if (job.failures + 1 < MAX_SEND_FAILURES) return;
  const created = await findJobBatch(provider, job.jobId, job.createdAtSeconds).catch(
    () => 'unknown' as const,
  );
  if (created !== undefined) return;
  await closeJob(
    client,
    { jobId: job.jobId, status: 'failed', maxSubmissions: job.settings.window.maxSubmissions },
    [],
    new Map(),
    `not sent after ${MAX_SEND_FAILURES} tries: ${message}`,
  );
}

async function pollOne(pool: pg.Pool, client: pg.PoolClient, job: JobRow): Promise<void> {
  const provider = providerClient(job.settings.endpoint);
  try {
    const batch = await provider.batches.retrieve(job.providerBatchId!);
    if (FINAL_STATES.has(batch.status)) return await takeIn(pool, client, provider, job, batch);
    const runningSeconds = Date.now() / 1000 - (job.submittedAtSeconds ?? job.createdAtSeconds);
    const overdue = runningSeconds > job.settings.window.maxJobMinutes * 60;
    // Cancelled once; a cancelled job ends `cancelled`, keeping what it answered.
    if (overdue && !job.cancelRequested) await provider.batches.cancel(batch.id);
    await markPolled(client, job.jobId, batch.status, overdue);
  } catch (error) {
    // A job at the provider is never given up: it ends there within its window, and its answers
    // are taken in when the provider answers again.
    await markFailed(client, job.jobId, error instanceof Error ? error.message : String(error));
  }
}

/**
 * Stores every answer of a finished job at the batch price, then closes it: the lines it left
 * unanswered go back to the queue or online (ledger.ts closeJob). Answers are stored before the
 * job closes, so a crash between the two only repeats stores that find their rows.
 */
async function takeIn(
  pool: pg.Pool,
  client: pg.PoolClient,
  provider: OpenAI,
  job: JobRow,
  batch: Batch,
): Promise<void> {
  const results = await downloadResults(provider, batch);
  const lines = await sentLines(client, job.jobId);
  const answers = new Map<string, NewCall>();
  const reasons = new Map<string, string>();
  for (const result of results) {
    const line = lines.get(result.custom_id);
    if (!line || answers.has(result.custom_id)) continue; // not this job's, or a line written twice
    const completion = answeredCompletion(result);
    if (!completion) {
      reasons.set(result.custom_id, failureOf(result));
      continue;
    }
    answers.set(result.custom_id, paidCall(job, result.custom_id, line, completion));
  }
  await Promise.all(
    [...answers.values()].map(async (call) => {
      const { stored, inserted } = await storeCall(pool, call);
      if (inserted) countPaid(call, stored.promptTokens, stored.completionTokens);
    }),
  );
  await closeJob(
    client,
    { jobId: job.jobId, status: batch.status, maxSubmissions: job.settings.window.maxSubmissions },
    [...answers.keys()],
    reasons,
  );
}

/** The completion of an answered line, or undefined for a failed or unreadable one. */
function answeredCompletion(result: ResultLine): ChatCompletion | undefined {
  const body = result.response?.status_code === 200 ? (result.response.body as ChatCompletion) : undefined;
  return body?.choices?.[0]?.message ? body : undefined;
}

function failureOf(result: ResultLine): string {
  if (result.error) return `${result.error.code ?? 'error'}: ${result.error.message ?? ''}`.slice(0, 500);
  if (result.response)
    return `status ${result.response.status_code}: ${JSON.stringify(result.response.body).slice(0, 400)}`;
  return 'no answer';
}

/** The ledger row of one answered line, priced at the endpoint's prices times the batch discount. */
function paidCall(job: JobRow, cacheKey: string, line: SentLine, completion: ChatCompletion): NewCall {
  const choice = completion.choices[0]!;
  const { costUsd, ...tokens } = pricedTokens(job.settings.endpoint.prices, completion.usage);
  return {
    ...line.identity,
    cacheKey,
    ...(line.runId !== null ? { runId: line.runId } : {}),
    ...(line.role !== null ? { role: line.role } : {}),
    response: boundedAnswer(choice.message, choice.finish_reason ?? 'stop'),
    ...tokens,
    costUsd: costUsd === null ? null : costUsd * job.settings.window.priceFactor,
    latencyMs: line.waitedMs,
    attempts: line.submissions,
    batchJobId: job.jobId,
  };
}

function countPaid(call: NewCall, promptTokens: number, completionTokens: number): void {
  const role = roleLabel(call.role);
  modelCalls.inc({ role, source: 'batch' });
  modelTokens.inc({ role, kind: 'prompt' }, promptTokens);
  modelTokens.inc({ role, kind: 'completion' }, completionTokens);
  if (call.costUsd !== null && call.costUsd !== undefined) modelCost.inc({ role }, call.costUsd);
}
