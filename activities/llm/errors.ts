/**
 * Errors of the model layer. Each keeps its context in readonly fields and has a fixed `name`, so
 * a Temporal retry policy can list the non-retryable ones by type (`nonRetryableErrorTypes`) and
 * the activity wrapper can tell them apart without parsing messages.
 */

/**
 * Thrown when an endpoint kept failing with retryable errors (429, 5xx, timeouts, connection
 * errors, unparseable bodies) until the endpoint's `maxRetries` were used up. Retrying later, as a
 * new activity attempt, may succeed.
 */
export class ModelRetriesExhaustedError extends Error {
  override readonly name = 'ModelRetriesExhaustedError';
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
  override readonly name = 'ModelRequestRejectedError';
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
  override readonly name = 'StructuredOutputRejectedError';
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
