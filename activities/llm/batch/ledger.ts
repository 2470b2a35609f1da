import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { BatchWindow } from '../../../schemas/model-batch.js';
import type { ModelEndpoint } from '../../../schemas/model-endpoint.js';
import { storableJson } from '../../store/storable.js';
import { canonicalJson, sha256, type CallIdentity } from '../cache-key.js';

/**
 * The batch tables (migration 035): groups, jobs and lines. Every state change is one statement
 * or one transaction, so a process killed between two of them leaves a state the next one goes on
 * from: a line is in at most one unfinished job, and only a line no finished job answered is sent
 * again.
 */

/** What the lines of one group share: where they go, who pays, and the window. */
export interface GroupSettings {
  readonly endpoint: ModelEndpoint;
  readonly role: string | null;
  readonly window: BatchWindow;
}

/** Where a request stands. */
export type LineState = 'queued' | 'sent' | 'answered' | 'online';

/** A request to queue. */
export interface NewLine {
  readonly cacheKey: string;
  readonly identity: CallIdentity;
  readonly runId?: string;
  readonly role?: string;
  readonly body: unknown;
}

/** The key of a group: the hash of its settings. */
export function groupKeyOf(settings: GroupSettings): string {
  return sha256(canonicalJson(settings));
}

/** Records the group unless it is recorded. */
export async function ensureGroup(pool: pg.Pool, settings: GroupSettings): Promise<void> {
  await pool.query(
    'INSERT INTO llm_batch_groups (group_key, settings) VALUES ($1, $2) ON CONFLICT (group_key) DO NOTHING',
    [groupKeyOf(settings), canonicalJson(settings)],
  );
}

/** Queues a request unless it is queued, sent or done already; returns where it stands. */
export async function enqueueLine(pool: pg.Pool, groupKey: string, line: NewLine): Promise<LineState> {
  const { rows } = await pool.query<{ state: LineState }>(
    `WITH inserted AS (
       INSERT INTO llm_batch_lines (cache_key, group_key, identity, run_id, role, body, state)
       VALUES ($1, $2, $3, $4, $5, $6, 'queued') ON CONFLICT (cache_key) DO NOTHING RETURNING state)
     SELECT state FROM inserted UNION ALL SELECT state FROM llm_batch_lines WHERE cache_key = $1 LIMIT 1`,
    [
      line.cacheKey,
      groupKey,
      JSON.stringify(line.identity),
      line.runId ?? null,
      line.role ?? null,
      JSON.stringify(storableJson(line.body)),
    ],
  );
  return rows[0]!.state;
}

/** The states of these requests (a key with no line is absent). */
export async function lineStates(pool: pg.Pool, keys: readonly string[]): Promise<Map<string, LineState>> {
  const { rows } = await pool.query<{ cache_key: string; state: LineState }>(
    'SELECT cache_key, state FROM llm_batch_lines WHERE cache_key = ANY($1::text[])',
    [keys],
  );
  return new Map(rows.map((r) => [r.cache_key, r.state]));
}

/** Groups whose queued requests are due for a job: enough of them, or the oldest waited enough. */
export async function dueGroups(pool: pg.Pool): Promise<Array<{ groupKey: string; maxRequests: number }>> {
  const { rows } = await pool.query<{ group_key: string; max_requests: number }>(
    `SELECT l.group_key, (g.settings->'window'->>'maxRequests')::int AS max_requests
       FROM llm_batch_lines l JOIN llm_batch_groups g USING (group_key)
      WHERE l.state = 'queued'
      GROUP BY l.group_key, g.settings
     HAVING count(*) >= (g.settings->'window'->>'maxRequests')::int
         OR min(l.enqueued_at) <= now() - make_interval(secs => (g.settings->'window'->>'maxWaitSeconds')::float8)`,
  );
  return rows.map((r) => ({ groupKey: r.group_key, maxRequests: r.max_requests }));
}

/**
 * Forms one job of up to `maxRequests` queued requests of the group, oldest first, in one
 * statement (lines another process is forming into its own job are skipped); undefined when none
 * was left.
 */
export async function formJob(
  pool: pg.Pool,
  groupKey: string,
  maxRequests: number,
): Promise<string | undefined> {
  const jobId = randomUUID();
  const { rows } = await pool.query<{ job_id: string }>(
    `WITH picked AS (
       SELECT cache_key FROM llm_batch_lines WHERE state = 'queued' AND group_key = $1
        ORDER BY enqueued_at, cache_key LIMIT $2 FOR UPDATE SKIP LOCKED),
     job AS (
       INSERT INTO llm_batch_jobs (job_id, group_key, state, lines)
       SELECT $3, $1, 'formed', count(*) FROM picked HAVING count(*) > 0 RETURNING job_id),
     sent AS (
       UPDATE llm_batch_lines l SET state = 'sent', job_id = job.job_id, submissions = l.submissions + 1
         FROM picked, job WHERE l.cache_key = picked.cache_key)
     SELECT job_id FROM job`,
    [groupKey, maxRequests, jobId],
  );
  return rows[0]?.job_id;
}

/** A job as the dispatcher handles it. */
export interface JobRow {
  readonly jobId: string;
  readonly settings: GroupSettings;
  readonly providerBatchId: string | null;
  readonly createdAtSeconds: number;
  readonly submittedAtSeconds: number | null;
  readonly cancelRequested: boolean;
  /** Sends or polls of this job that failed in a row. */
  readonly failures: number;
}

const JOB_COLUMNS = `j.job_id, g.settings, j.provider_batch_id, extract(epoch FROM j.created_at)::float8 AS created,
  extract(epoch FROM j.submitted_at)::float8 AS submitted, j.cancel_requested_at IS NOT NULL AS cancel_requested,
  j.failures`;

function jobOf(row: Record<string, unknown>): JobRow {
  return {
    jobId: row.job_id as string,
    settings: row.settings as GroupSettings,
    providerBatchId: row.provider_batch_id as string | null,
    createdAtSeconds: row.created as number,
    submittedAtSeconds: row.submitted as number | null,
    cancelRequested: row.cancel_requested as boolean,
    failures: row.failures as number,
  };
}

/**
 * Locks one job to send (`formed`) or to poll (`submitted`), not tried within its poll interval
 * and not in `skip` (the jobs this pass handled already), for the rest of the transaction; other
 * processes skip it.
 */
export async function claimJob(
  client: pg.PoolClient,
  state: 'formed' | 'submitted',
  skip: readonly string[] = [],
): Promise<JobRow | undefined> {
  const { rows } = await client.query(
    `SELECT ${JOB_COLUMNS} FROM llm_batch_jobs j JOIN llm_batch_groups g USING (group_key)
      WHERE j.state = $1 AND NOT (j.job_id = ANY($2::text[]))
        AND (j.polled_at IS NULL
             OR j.polled_at <= now() - make_interval(secs => (g.settings->'window'->>'pollSeconds')::float8))
      ORDER BY j.polled_at NULLS FIRST, j.created_at LIMIT 1 FOR UPDATE OF j SKIP LOCKED`,
    [state, skip],
  );
  return rows[0] ? jobOf(rows[0]) : undefined;
}

/** The request lines of a job, as sent. */
export async function jobLines(
  client: pg.PoolClient,
  jobId: string,
): Promise<Array<{ customId: string; body: unknown }>> {
  const { rows } = await client.query<{ cache_key: string; body: unknown }>(
    'SELECT cache_key, body FROM llm_batch_lines WHERE job_id = $1 AND state = $2 ORDER BY cache_key',
    [jobId, 'sent'],
  );
  return rows.map((r) => ({ customId: r.cache_key, body: r.body }));
}

/** A line of a job that the job has not answered yet: what its ledger row is made from. */
export interface SentLine {
  readonly identity: CallIdentity;
  readonly runId: string | null;
  readonly role: string | null;
  readonly waitedMs: number;
  readonly submissions: number;
}

/** The identity, payer and queueing time of each still-sent line of a job. */
export async function sentLines(client: pg.PoolClient, jobId: string): Promise<Map<string, SentLine>> {
  const { rows } = await client.query(
    `SELECT cache_key, identity, run_id, role, submissions,
            (extract(epoch FROM now() - enqueued_at) * 1000)::float8 AS waited
       FROM llm_batch_lines WHERE job_id = $1 AND state = 'sent'`,
    [jobId],
  );
  return new Map(
    rows.map((r) => [
      r.cache_key as string,
      {
        identity: r.identity as CallIdentity,
        runId: r.run_id as string | null,
        role: r.role as string | null,
        waitedMs: Math.round(r.waited as number),
        submissions: r.submissions as number,
      },
    ]),
  );
}

/** Records that the job's provider batch exists. */
export async function markSubmitted(
  client: pg.PoolClient,
  jobId: string,
  batchId: string,
  fileId: string,
  status: string,
): Promise<void> {
  await client.query(
    `UPDATE llm_batch_jobs SET state = 'submitted', provider_batch_id = $2, input_file_id = $3,
            provider_status = $4, submitted_at = coalesce(submitted_at, now()), polled_at = now(), failures = 0
      WHERE job_id = $1`,
    [jobId, batchId, fileId, status],
  );
}

/** Records a failed send or poll: the job is tried again after its poll interval. */
export async function markFailed(client: pg.PoolClient, jobId: string, error: string): Promise<void> {
  await client.query(
    'UPDATE llm_batch_jobs SET failures = failures + 1, last_error = $2, polled_at = now() WHERE job_id = $1',
    [jobId, error.slice(0, 2_000)],
  );
}

/** Records a poll of a running job (and, with `cancelled`, that its cancellation was asked for). */
export async function markPolled(
  client: pg.PoolClient,
  jobId: string,
  status: string,
  cancelled: boolean,
): Promise<void> {
  await client.query(
    `UPDATE llm_batch_jobs SET provider_status = $2, polled_at = now(), failures = 0,
            cancel_requested_at = CASE WHEN $3 THEN coalesce(cancel_requested_at, now()) ELSE cancel_requested_at END
      WHERE job_id = $1`,
    [jobId, status, cancelled],
  );
}

/**
 * Closes a finished job whose answers are stored: its answered lines are marked so, the rest go
 * back to the queue or, after `maxSubmissions` jobs, online, with the reason recorded.
 */
export async function closeJob(
  client: pg.PoolClient,
  job: { jobId: string; status: string; maxSubmissions: number },
  answered: readonly string[],
  reasons: ReadonlyMap<string, string>,
  reasonForRest = `job ended ${job.status} without this line`,
): Promise<void> {
  const marked = await client.query(
    `UPDATE llm_batch_lines SET state = 'answered', body = NULL WHERE job_id = $1 AND state = 'sent' AND cache_key = ANY($2::text[])`,
    [job.jobId, answered],
  );
  const keys = [...reasons.keys()];
  const { rowCount } = await client.query(
    `UPDATE llm_batch_lines l
        SET state = CASE WHEN l.submissions < $2 THEN 'queued' ELSE 'online' END,
            last_error = coalesce(r.reason, $3)
       FROM (SELECT cache_key FROM llm_batch_lines WHERE job_id = $1 AND state = 'sent') AS s
       LEFT JOIN unnest($4::text[], $5::text[]) AS r(key, reason) ON r.key = s.cache_key
      WHERE l.cache_key = s.cache_key`,
    [job.jobId, job.maxSubmissions, reasonForRest, keys, keys.map((k) => reasons.get(k)!)],
  );
  await client.query(
    `UPDATE llm_batch_jobs SET state = 'done', provider_status = $2, answered = $3, unanswered = $4, done_at = now()
      WHERE job_id = $1`,
    [job.jobId, job.status, marked.rowCount ?? 0, rowCount ?? 0],
  );
}
