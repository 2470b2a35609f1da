import { SpanStatusCode, trace } from '@opentelemetry/api';
import type pg from 'pg';
import type { z } from 'zod';
import { loadEnvironment } from '../../schemas/environment.js';
import { activityCancellation, finishingAtShutdown } from '../cancellation.js';
import { getPool, retryOnConnectionError } from '../store/db.js';
import { boundedAnswer, isOversized, outOfBounds } from './answer-bounds.js';
import type { BackoffOptions } from './backoff.js';
import { createBatchCompleter } from './batch/completer.js';
import { cacheKey, identifyCall } from './cache-key.js';
import {
  findCall,
  queryUsageByRole,
  recordRejection,
  resultOfStored,
  storeCall,
  type StoredCall,
} from './call-store.js';
import { pricedTokens } from './cost.js';
import { modelCalls, modelCost, modelErrors, modelTokens, roleLabel } from '../telemetry/metrics.js';
import { StructuredOutputRejectedError } from './errors.js';
import { gatewayCompleter } from './gateway-client.js';
import { SingleFlight } from './single-flight.js';
import {
  checkStructured,
  DEFAULT_MAX_STRUCTURED_BYTES,
  jsonSchemaResponseFormat,
  repairMessages,
} from './structured-output.js';
import type { ChatResult, ModelCall, RoleUsage, StructuredResult } from './types.js';
import { chatRequestBody, completeUpstream } from './upstream.js';

/** Options of {@link createModelClient}. */
export interface ModelClientOptions {
  /** PostgreSQL holding `llm_calls` and `llm_rejections` (migrated). Default: `DATABASE_URL`. */
  readonly databaseUrl?: string;
  /** Backoff between retries when the endpoint gives no Retry-After. */
  readonly backoff?: BackoffOptions;
  /** Larger structured outputs are rejected unparsed (then repaired once). Default 256 KiB. */
  readonly maxStructuredBytes?: number;
  /**
   * Send calls through the model gateway at this URL (`mockworld gateway`), which finishes and
   * records a paid call even when this process dies mid-call. Default: `MOCKWORLD_MODEL_GATEWAY_URL`;
   * null = always in process.
   */
  readonly gatewayUrl?: string | null;
}

/** Cached, rate-limited, retried access to OpenAI-compatible model endpoints. */
export interface ModelClient {
  /**
   * One chat completion. Served from `llm_calls` when the same call (endpoint, model, request,
   * sample index, policy version) was answered before, in any process; otherwise sent upstream
   * once per process however many identical calls run concurrently, then stored. Tool calls come
   * back untouched in `message.tool_calls`.
   */
  chat(call: ModelCall): Promise<ChatResult>;
  /**
   * A JSON answer validated by `schema`, requested with a strict `json_schema` response format.
   * An invalid answer gets exactly one (cached) repair call; if that is invalid too, the failure
   * is recorded in `llm_rejections` and {@link StructuredOutputRejectedError} is thrown.
   */
  structured<S extends z.ZodType>(
    call: ModelCall,
    schema: S,
    schemaName: string,
  ): Promise<StructuredResult<z.output<S>>>;
  /**
   * A free-text answer of at most `maxBytes` (the simulated user's turn). An answer over it is
   * recorded in `llm_rejections` (reason `too_large`, schema name `name`) and
   * {@link StructuredOutputRejectedError} is thrown: the answer is cached, so only another
   * `sampleIndex` can give another one. Empty text and tool calls come back as they are.
   */
  text(call: ModelCall, name: string, maxBytes: number): Promise<ChatResult & { readonly text: string }>;
  /** Calls, tokens, attempts and rejections per role of one run. */
  usageByRole(runId: string): Promise<RoleUsage[]>;
}

const tracer = trace.getTracer('mockworld');

/** Concurrent identical calls of this process, across client instances. */
const flights = new SingleFlight<ChatResult>();

/**
 * One paid-once chat completion: `call` with an optional response format. Implemented in process
 * ({@link createCallCompleter}) or by a model gateway (gateway-client.ts) that outlives workers.
 */
export type CallCompleter = (call: ModelCall, responseFormat?: unknown) => Promise<ChatResult>;

/**
 * Completes calls in this process: served from `llm_calls` when the same call was answered before,
 * otherwise sent upstream once however many identical calls run concurrently, then stored.
 */
export function createCallCompleter(databaseUrl: string, backoff: BackoffOptions = {}): CallCompleter {
  const pool = (): pg.Pool => getPool(databaseUrl);
  return async (call, responseFormat) => {
    const identity = identifyCall(call, responseFormat);
    const key = cacheKey(identity);
    const { value, shared } = await flights.run(
      `${databaseUrl}\n${key}`,
      async (signal) => {
        const role = roleLabel(call.role);
        const found = await findCall(pool(), key);
        if (found) {
          modelCalls.inc({ role, source: 'cache' });
          return resultOfStored(found, true);
        }
        const answer = await completeTraced(call, responseFormat, backoff, signal, role);
        const choice = answer.completion.choices[0]!;
        // Only the fields the stages read, and at most the answer bound: a hostile server's 3 MB
        // answer or 5,000-deep extra field never reaches a row (it is stored cut, marked oversized).
        const response = {
          ...boundedAnswer(choice.message, choice.finish_reason ?? 'stop'),
          // Which policy version answered: a cached answer still says so.
          ...(answer.servedVersion !== undefined ? { servedVersion: answer.servedVersion } : {}),
        };
        // The answer is paid for: a ledger write cut off by a PostgreSQL restart is retried here,
        // since failing the activity would make its retry ask (and pay) again; a caller that left
        // meanwhile does not stop it (the retry is bounded in time).
        const priced = pricedTokens(call.endpoint.prices, answer.completion.usage);
        const { stored, inserted } = await retryOnConnectionError(() =>
          storeCall(pool(), {
            ...identity,
            cacheKey: key,
            runId: call.runId,
            role: call.role,
            response,
            ...priced,
            latencyMs: answer.latencyMs,
            attempts: answer.attempts,
          }),
        );
        if (inserted) countPaid(role, stored, priced.costUsd);
        return resultOfStored(stored, !inserted);
      },
      call.signal,
    );
    return shared ? { ...value, cached: true } : value;
  };
}

/** The paid upstream call, in a span of its own (a no-op unless the worker traces: workers/tracing.ts). */
function completeTraced(
  call: ModelCall,
  responseFormat: unknown,
  backoff: BackoffOptions,
  signal: AbortSignal,
  role: string,
) {
  return tracer.startActiveSpan(
    'mockworld.model_call',
    { attributes: { 'mockworld.role': role, 'gen_ai.request.model': call.endpoint.model } },
    async (span) => {
      try {
        const paid = await completeUpstream(
          call.endpoint,
          chatRequestBody(call, responseFormat),
          backoff,
          signal,
          call.role,
        );
        span.setAttributes({
          'gen_ai.usage.input_tokens': paid.completion.usage?.prompt_tokens ?? 0,
          'gen_ai.usage.output_tokens': paid.completion.usage?.completion_tokens ?? 0,
          'mockworld.attempts': paid.attempts,
        });
        return paid;
      } catch (error) {
        modelErrors.inc({ role, kind: error instanceof Error ? error.name : 'unknown' });
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: error instanceof Error ? error.message : String(error),
        });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Counts one paid call in this process's metrics. */
function countPaid(role: string, stored: StoredCall, costUsd: number | null): void {
  modelCalls.inc({ role, source: 'paid' });
  modelTokens.inc({ role, kind: 'prompt' }, stored.promptTokens);
  modelTokens.inc({ role, kind: 'completion' }, stored.completionTokens);
  if (costUsd !== null) modelCost.inc({ role }, costUsd);
}

/**
 * How a client's calls are completed: a call with a batch window waits for a provider batch job;
 * the rest (and a batch line the rule sends online) go through the gateway when there is one,
 * else in process.
 */
function completerFor(
  options: ModelClientOptions,
  environment: ReturnType<typeof loadEnvironment>,
  databaseUrl: string,
): CallCompleter {
  const gatewayUrl =
    options.gatewayUrl === undefined ? environment.MOCKWORLD_MODEL_GATEWAY_URL : options.gatewayUrl;
  const online = gatewayUrl
    ? gatewayCompleter(gatewayUrl, environment.MOCKWORLD_MODEL_GATEWAY_AUTH)
    : createCallCompleter(databaseUrl, options.backoff);
  return createBatchCompleter(databaseUrl, online);
}

/** Creates a model client on a shared connection pool; it holds no other resources. */
export function createModelClient(options: ModelClientOptions = {}): ModelClient {
  const environment = loadEnvironment();
  const databaseUrl = options.databaseUrl ?? environment.DATABASE_URL;
  const maxStructuredBytes = options.maxStructuredBytes ?? DEFAULT_MAX_STRUCTURED_BYTES;
  const pool = (): pg.Pool => getPool(databaseUrl);
  const completer = completerFor(options, environment, databaseUrl);
  // Inside an activity a call stops when the activity is cancelled, the caller's signal or not.
  const complete: CallCompleter = (call, responseFormat) =>
    finishingAtShutdown(call.signal ?? activityCancellation(), (signal) =>
      completer(signal ? { ...call, signal } : call, responseFormat),
    );

  async function structured<S extends z.ZodType>(
    call: ModelCall,
    schema: S,
    schemaName: string,
  ): Promise<StructuredResult<z.output<S>>> {
    const responseFormat = jsonSchemaResponseFormat(schema, schemaName);
    const first = await complete(call, responseFormat);
    const checked = checkStructured(first.message, first.finishReason, schema, maxStructuredBytes);
    if (checked.ok) {
      return { value: checked.value, cacheKey: first.cacheKey, repaired: false, ...summary([first]) };
    }
    const repairCall: ModelCall = {
      ...call,
      messages: [
        ...call.messages,
        ...repairMessages(first.message.content, checked, schemaName, responseFormat.json_schema.schema),
      ],
    };
    const repair = await complete(repairCall, responseFormat);
    const rechecked = checkStructured(repair.message, repair.finishReason, schema, maxStructuredBytes);
    if (rechecked.ok) {
      return {
        value: rechecked.value,
        cacheKey: first.cacheKey,
        repaired: true,
        ...summary([first, repair]),
      };
    }
    await recordRejection(pool(), {
      cacheKey: first.cacheKey,
      runId: call.runId,
      role: call.role,
      schemaName,
      reason: rechecked.reason,
      rawOutput: repair.message.content ?? JSON.stringify(repair.message),
    });
    throw new StructuredOutputRejectedError(first.cacheKey, schemaName, rechecked.reason, rechecked.detail);
  }

  async function text(call: ModelCall, name: string, maxBytes: number) {
    const answer = await complete(call);
    const content = answer.message.content ?? '';
    const out = isOversized(answer.finishReason)
      ? { reason: 'too_large' as const, detail: `the answer is over the stored bound (cut)` }
      : outOfBounds(content, { maxBytes });
    if (!out) return { ...answer, text: content };
    await recordRejection(pool(), {
      cacheKey: answer.cacheKey,
      runId: call.runId,
      role: call.role,
      schemaName: name,
      reason: out.reason,
      rawOutput: content,
    });
    throw new StructuredOutputRejectedError(answer.cacheKey, name, out.reason, out.detail);
  }

  return {
    chat: (call) => complete(call),
    structured,
    text,
    usageByRole: (runId) => queryUsageByRole(pool(), runId),
  };
}

/**
 * Calls, tokens, attempts and rejections per role of one run, read from the ledger of the given
 * database (the CLI's report; works after the run's workers are gone).
 */
export function usageByRole(databaseUrl: string, runId: string): Promise<RoleUsage[]> {
  return queryUsageByRole(getPool(databaseUrl), runId);
}

/** Usage, latency and cache status over the calls behind one structured answer; the last message wins. */
function summary(calls: ChatResult[]) {
  const last = calls[calls.length - 1]!;
  return {
    message: last.message,
    usage: {
      promptTokens: calls.reduce((sum, c) => sum + c.usage.promptTokens, 0),
      completionTokens: calls.reduce((sum, c) => sum + c.usage.completionTokens, 0),
    },
    cached: calls.every((c) => c.cached),
    latencyMs: calls.reduce((sum, c) => sum + c.latencyMs, 0),
  };
}
