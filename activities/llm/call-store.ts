import type pg from 'pg';
import { RowVanishedError } from '../store/errors.js';
import { storableJson, storableText } from '../store/storable.js';
import type { CallIdentity } from './cache-key.js';
import type { ChatCompletionMessage, RoleUsage } from './types.js';

/** What the store keeps of an answer: the message untouched and why generation stopped. */
export interface StoredResponse {
  readonly message: ChatCompletionMessage;
  readonly finishReason: string;
  /** The policy version that answered, when the server named it (`x-policy-version`). */
  readonly servedVersion?: string;
}

/** One `llm_calls` row as the model layer reads it. */
export interface StoredCall {
  readonly cacheKey: string;
  readonly response: StoredResponse;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly latencyMs: number;
  readonly attempts: number;
}

/** A paid call to record. */
export interface NewCall extends CallIdentity {
  readonly cacheKey: string;
  readonly runId?: string;
  readonly role?: string;
  readonly response: StoredResponse;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly latencyMs: number;
  readonly attempts: number;
  /** Prompt tokens the provider served from its prompt cache (default 0). */
  readonly cachedPromptTokens?: number;
  /** What the answer cost (cost.ts); null or absent: the endpoint has no prices. */
  readonly costUsd?: number | null;
}

const COLUMNS = `cache_key, response, prompt_tokens, completion_tokens, latency_ms, upstream_attempts`;

interface Row {
  cache_key: string;
  response: StoredResponse;
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number;
  upstream_attempts: number;
}

function fromRow(row: Row): StoredCall {
  return {
    cacheKey: row.cache_key,
    response: row.response,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    latencyMs: row.latency_ms,
    attempts: row.upstream_attempts,
  };
}

/** The stored answer for a key, if any. */
export async function findCall(pool: pg.Pool, cacheKey: string): Promise<StoredCall | undefined> {
  const { rows } = await pool.query<Row>({
    // Named: prepared once per connection; this and the insert run on every call.
    name: 'mockworld_llm_calls_find',
    text: `SELECT ${COLUMNS} FROM llm_calls WHERE cache_key = $1`,
    values: [cacheKey],
  });
  return rows[0] && fromRow(rows[0]);
}

/**
 * Records a paid call unless another caller recorded the same key first, and returns the row that
 * is stored either way: racing callers all return the first answer and usage is counted once.
 * `inserted` is false for the callers that lost the race (their upstream spend is not counted).
 */
export async function storeCall(
  pool: pg.Pool,
  call: NewCall,
): Promise<{ stored: StoredCall; inserted: boolean }> {
  const inserted = await pool.query<Row>({
    name: 'mockworld_llm_calls_store',
    text: `INSERT INTO llm_calls (cache_key, endpoint, model, request_hash, sample_index, policy_version, run_id, role,
       response, prompt_tokens, completion_tokens, latency_ms, upstream_attempts, cached_prompt_tokens, cost_usd)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (cache_key) DO NOTHING
     RETURNING ${COLUMNS}`,
    values: [
      call.cacheKey,
      call.endpoint,
      call.model,
      call.requestHash,
      call.sampleIndex,
      call.policyVersion,
      call.runId ?? null,
      call.role ?? null,
      jsonbText(call.response),
      call.promptTokens,
      call.completionTokens,
      call.latencyMs,
      call.attempts,
      call.cachedPromptTokens ?? 0,
      call.costUsd ?? null,
    ],
  });
  if (inserted.rows[0]) return { stored: fromRow(inserted.rows[0]), inserted: true };
  const existing = await findCall(pool, call.cacheKey);
  if (!existing) throw new RowVanishedError('llm_calls', call.cacheKey);
  return { stored: existing, inserted: false };
}

/**
 * JSON text PostgreSQL accepts as jsonb: jsonb cannot hold U+0000 or an unpaired surrogate, which
 * a model (or a broken server, in any key of the message) can emit, so each is replaced by U+FFFD
 * rather than failing the call after it was paid for.
 */
function jsonbText(value: unknown): string {
  return JSON.stringify(storableJson(value));
}

/** A structured output rejected after repair. */
export interface Rejection {
  readonly cacheKey: string;
  readonly runId?: string;
  readonly role?: string;
  readonly schemaName: string;
  readonly reason: string;
  readonly rawOutput: string;
}

/** Bound on the raw output kept with a rejection. */
export const REJECTION_RAW_LIMIT = 16_384;

/** Records a rejection once per first-call key (a retried activity finds it already there). */
export async function recordRejection(pool: pg.Pool, rejection: Rejection): Promise<void> {
  await pool.query(
    `INSERT INTO llm_rejections (cache_key, run_id, role, schema_name, reason, raw_output)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (cache_key) DO NOTHING`,
    [
      rejection.cacheKey,
      rejection.runId ?? null,
      rejection.role ?? null,
      rejection.schemaName,
      rejection.reason,
      storableText(rejection.rawOutput.slice(0, REJECTION_RAW_LIMIT)),
    ],
  );
}

/** Calls, tokens, attempts and rejections per role of one run, from the ledger tables. */
export async function queryUsageByRole(pool: pg.Pool, runId: string): Promise<RoleUsage[]> {
  const { rows } = await pool.query<{
    role: string | null;
    calls: string;
    prompt_tokens: string;
    completion_tokens: string;
    attempts: string;
    rejections: string;
    cost: number | null;
  }>(
    `SELECT role, sum(calls) AS calls, sum(prompt_tokens) AS prompt_tokens,
            sum(completion_tokens) AS completion_tokens, sum(attempts) AS attempts,
            sum(rejections) AS rejections, sum(cost_usd)::float8 AS cost
     FROM (SELECT role, 1 AS calls, prompt_tokens, completion_tokens, upstream_attempts AS attempts, 0 AS rejections, cost_usd
           FROM llm_calls WHERE run_id = $1
           UNION ALL
           SELECT role, 0, 0, 0, 0, 1, NULL FROM llm_rejections WHERE run_id = $1) AS ledger
     GROUP BY role
     ORDER BY role NULLS LAST`,
    [runId],
  );
  return rows.map((r) => ({
    role: r.role,
    calls: Number(r.calls),
    promptTokens: Number(r.prompt_tokens),
    completionTokens: Number(r.completion_tokens),
    attempts: Number(r.attempts),
    rejections: Number(r.rejections),
    costUsd: r.cost,
  }));
}
