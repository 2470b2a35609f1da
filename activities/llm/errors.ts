/**
 * Errors of the model layer. Each keeps its context in readonly fields and declares its Temporal
 * failure `type` (its `name`) and whether a retry can help (activities/error-class.ts), so the
 * retry policies list the non-retryable ones from {@link LLM_ERRORS} and the activity wrapper can
 * tell them apart without parsing messages. Pure: workflow code imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/**
 * Thrown when an endpoint kept failing with retryable errors (429, 5xx, timeouts, connection
 * errors, unparseable bodies) until the endpoint's `maxRetries` were used up. Retrying later, as a
 * new activity attempt, may succeed.
 */
export class ModelRetriesExhaustedError extends Error {
  static readonly type = 'ModelRetriesExhaustedError';
  static readonly retryable = true;
  override readonly name = ModelRetriesExhaustedError.type;
  constructor(
    /** Base URL of the endpoint that failed. */
    readonly endpoint: string,
    /** Model name sent in the requests. */
    readonly model: string,
    /** HTTP attempts made, the first one included. */
    readonly attempts: number,
    /** HTTP status of the last attempt; undefined when it got no response (timeout, connection). */
    readonly lastStatus: number | undefined,
    /** Short description of the last failure. */
    readonly lastReason: string,
  ) {
    super(
      `Model endpoint ${endpoint} (model ${model}) failed after ${attempts} attempt(s); ` +
        `last status ${lastStatus ?? 'none'}: ${lastReason}`,
    );
  }
}

/**
 * Thrown at once, without retries, when an endpoint answers with a 4xx other than 408 and 429:
 * the request itself is wrong (bad parameters, unknown model, missing or wrong key) and sending it
 * again cannot help. Callers treat it as non-retryable.
 */
export class ModelRequestRejectedError extends Error {
  static readonly type = 'ModelRequestRejectedError';
  static readonly retryable = false;
  override readonly name = ModelRequestRejectedError.type;
  constructor(
    /** Base URL of the endpoint that refused the request. */
    readonly endpoint: string,
    /** Model name sent in the request. */
    readonly model: string,
    /** HTTP status of the refusal. */
    readonly status: number,
    /** The endpoint's error message, if any. */
    readonly detail: string,
  ) {
    super(`Model endpoint ${endpoint} (model ${model}) refused the request with ${status}: ${detail}`);
  }
}

/** Why a structured output was rejected. */
export type RejectionReason =
  'not_json' | 'truncated' | 'schema_invalid' | 'too_large' | 'too_deep' | 'no_content';

/**
 * Thrown when a structured output stayed invalid after the one repair call. The failure is
 * deterministic (both calls are cached), so callers treat it as non-retryable; a new answer needs
 * a different `sampleIndex`. A row in `llm_rejections` keyed by `cacheKey` records the raw output.
 */
export class StructuredOutputRejectedError extends Error {
  static readonly type = 'StructuredOutputRejectedError';
  static readonly retryable = false;
  override readonly name = StructuredOutputRejectedError.type;
  constructor(
    /** Cache key of the first (unrepaired) call; also the key of the `llm_rejections` row. */
    readonly cacheKey: string,
    /** Name of the expected schema. */
    readonly schemaName: string,
    /** Why the repaired output was still rejected. */
    readonly reason: RejectionReason,
    /** Validation details of the last output (bounded). */
    readonly detail: string,
  ) {
    super(`Structured output "${schemaName}" rejected (${reason}) for call ${cacheKey}: ${detail}`);
  }
}

/**
 * Thrown when the model gateway (MOCKWORLD_MODEL_GATEWAY_URL) cannot be reached, or answers with
 * something other than a model call's result or one of the model layer's errors. Retryable: a
 * gateway restarting is back within seconds, and the call it may have paid for is in its ledger.
 */
export class ModelGatewayError extends Error {
  static readonly type = 'ModelGatewayError';
  static readonly retryable = true;
  override readonly name = ModelGatewayError.type;
  constructor(
    /** The gateway's origin, e.g. `http://127.0.0.1:8090`. */
    readonly gateway: string,
    /** What went wrong, and what to do. */
    readonly detail: string,
  ) {
    super(`model gateway ${gateway} ${detail}`);
  }
}

/** Every error of the model layer, for the retry policies and the retry-table test. */
export const LLM_ERRORS = [
  ModelRetriesExhaustedError,
  ModelRequestRejectedError,
  StructuredOutputRejectedError,
  ModelGatewayError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link LLM_ERRORS} a retry cannot fix. */
export const LLM_NON_RETRYABLE_ERRORS = nonRetryableTypes(LLM_ERRORS);
