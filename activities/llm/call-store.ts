import type pg from 'pg';
import { isConnectionError } from '../store/db.js';
import { RowVanishedError } from '../store/errors.js';
import { storableJson, storableText } from '../store/storable.js';
import { Batcher } from './batcher.js';
import type { CallIdentity } from './cache-key.js';
import type { ChatCompletionMessage, ChatResult, RoleUsage } from './types.js';
import { RUN_OF_CALL } from './spend.js';

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
  /** The batch job that answered it (activities/llm/batch); absent: answered online. */
  readonly batchJobId?: string;
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

/**
 * Lookups and inserts of the ledger, grouped per pool: the model layer makes one of each per call,
 * and at a few hundred calls in flight one statement per call would cost more CPU (client,
 * backend, commit) than the HTTP call itself (bench/model-layer.ts).
 */
interface Ledger {
  readonly find: Batcher<string, StoredCall | undefined>;
  readonly store: Batcher<NewCall, { stored: StoredCall; inserted: boolean }>;
}

const BATCHING = { maxBatch: 128, maxInFlight: 2 } as const;
const ledgers = new WeakMap<pg.Pool, Ledger>();

function ledgerOf(pool: pg.Pool): Ledger {
  let ledger = ledgers.get(pool);
  if (!ledger) {
    ledger = {
      find: new Batcher((keys) => findMany(pool, keys), BATCHING),
      store: new Batcher((calls) => storeMany(pool, calls), BATCHING),
    };
    ledgers.set(pool, ledger);
  }
  return ledger;
}

/** A stored call as a caller's result; `cached`: it was answered before this call asked. */
export function resultOfStored(stored: StoredCall, cached: boolean): ChatResult {
  return {
    cacheKey: stored.cacheKey,
    message: stored.response.message,
    finishReason: stored.response.finishReason,
    ...(stored.response.servedVersion !== undefined ? { servedVersion: stored.response.servedVersion } : {}),
    usage: { promptTokens: stored.promptTokens, completionTokens: stored.completionTokens },
    cached,
    latencyMs: stored.latencyMs,
    attempts: stored.attempts,
  };
}

/** The stored answer for a key, if any. */
export function findCall(pool: pg.Pool, cacheKey: string): Promise<StoredCall | undefined> {
  return ledgerOf(pool).find.submit(cacheKey);
}

/**
 * Records a paid call unless another caller recorded the same key first, and returns the row that
 * is stored either way: racing callers all return the first answer and usage is counted once.
 * `inserted` is false for the callers that lost the race (their upstream spend is not counted).
 * Resolves once the row is committed.
 */
export function storeCall(pool: pg.Pool, call: NewCall): Promise<{ stored: StoredCall; inserted: boolean }> {
  return ledgerOf(pool).store.submit(call);
}

async function findMany(
  pool: pg.Pool,
  keys: readonly string[],
): Promise<Array<PromiseFulfilledResult<StoredCall | undefined>>> {
  const found = await selectByKeys(pool, keys);
  return keys.map((key) => ({ status: 'fulfilled', value: found.get(key) }));
}

async function selectByKeys(pool: pg.Pool, keys: readonly string[]): Promise<Map<string, StoredCall>> {
  const { rows } = await pool.query<Row>({
    // Named: prepared once per connection.
    name: 'mockworld_llm_calls_find_many',
    text: `SELECT ${COLUMNS} FROM llm_calls WHERE cache_key = ANY($1::text[])`,
    values: [[...new Set(keys)]],
  });
  return new Map(rows.map((row) => [row.cache_key, fromRow(row)]));
}

/**
 * Inserts a batch in one statement; the first of several calls with one key is the one inserted.
 * A batch the server refuses for another reason than the connection (a value it cannot take) is
 * retried row by row, so only the call with the bad row fails.
 */
async function storeMany(
  pool: pg.Pool,
  calls: readonly NewCall[],
): Promise<Array<PromiseSettledResult<{ stored: StoredCall; inserted: boolean }>>> {
  try {
    return (await insertMany(pool, calls)).map((value) => ({ status: 'fulfilled', value }));
  } catch (error) {
    if (calls.length === 1 || isConnectionError(error)) throw error;
    return Promise.allSettled(calls.map(async (call) => (await insertMany(pool, [call]))[0]!));
  }
}

async function insertMany(
  pool: pg.Pool,
  calls: readonly NewCall[],
): Promise<Array<{ stored: StoredCall; inserted: boolean }>> {
  // jsonb cannot hold U+0000 or an unpaired surrogate, which a model (or a broken server, in any
  // key of the message) can emit: each is replaced by U+FFFD rather than failing a paid call.
  const responses = calls.map((call) => storableJson(call.response) as StoredResponse);
  const column = <T>(pick: (call: NewCall, i: number) => T) => calls.map(pick);
  const { rows } = await pool.query<{ cache_key: string }>({
    name: 'mockworld_llm_calls_store_many',
    text: `INSERT INTO llm_calls (cache_key, endpoint, model, request_hash, sample_index, policy_version, run_id, role,
       response, prompt_tokens, completion_tokens, latency_ms, upstream_attempts, cached_prompt_tokens, cost_usd, batch_job_id)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[],
       $9::jsonb[], $10::int[], $11::int[], $12::int[], $13::int[], $14::int[], $15::float8[], $16::text[])
     ON CONFLICT (cache_key) DO NOTHING
     RETURNING cache_key`,
    values: [
      column((c) => c.cacheKey),
      column((c) => c.endpoint),
      column((c) => c.model),
      column((c) => c.requestHash),
      column((c) => c.sampleIndex),
      column((c) => c.policyVersion),
      column((c) => c.runId ?? null),
      column((c) => c.role ?? null),
      column((_, i) => JSON.stringify(responses[i])),
      column((c) => c.promptTokens),
      column((c) => c.completionTokens),
      column((c) => c.latencyMs),
      column((c) => c.attempts),
      column((c) => c.cachedPromptTokens ?? 0),
      column((c) => c.costUsd ?? null),
      column((c) => c.batchJobId ?? null),
    ],
  });
  const inserted = new Set(rows.map((row) => row.cache_key));
  const mine = new Map<string, StoredCall>();
  calls.forEach((call, i) => {
    if (inserted.has(call.cacheKey) && !mine.has(call.cacheKey)) {
      mine.set(call.cacheKey, {
        cacheKey: call.cacheKey,
        response: responses[i]!,
        promptTokens: call.promptTokens,
        completionTokens: call.completionTokens,
        latencyMs: call.latencyMs,
        attempts: call.attempts,
      });
    }
  });
  const others = calls.filter((call) => !mine.has(call.cacheKey)).map((call) => call.cacheKey);
  const existing = others.length > 0 ? await selectByKeys(pool, others) : new Map<string, StoredCall>();
  const claimed = new Set<string>();
  return calls.map((call) => {
    const own = mine.get(call.cacheKey);
    if (own && !claimed.has(call.cacheKey)) {
      claimed.add(call.cacheKey);
      return { stored: own, inserted: true };
    }
    const stored = own ?? existing.get(call.cacheKey);
    if (!stored) throw new RowVanishedError('llm_calls', call.cacheKey);
    return { stored, inserted: false };
  });
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

/**
 * The roles of a run whose calls a model of this name answered (the embedded toy, say), in order;
 * a Synthesis run's calls are charged to its tasks (`<run id>-task-<n>`), and count as its own.
 */
export async function queryRolesAnsweredBy(pool: pg.Pool, runId: string, model: string): Promise<string[]> {
  const { rows } = await pool.query<{ role: string }>(
    `SELECT DISTINCT role FROM llm_calls
      WHERE (run_id = $1 OR ${RUN_OF_CALL} = $1) AND model = $2 AND role IS NOT NULL
      ORDER BY role`,
    [runId, model],
  );
  return rows.map((r) => r.role);
}
