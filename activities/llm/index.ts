/**
 * The model layer: cached, rate-limited, retried calls to OpenAI-compatible endpoints, with
 * validated structured outputs and a usage ledger in PostgreSQL.
 */
export { createModelClient, usageByRole, type ModelClient, type ModelClientOptions } from './model-client.js';
export {
  LLM_ERRORS,
  LLM_NON_RETRYABLE_ERRORS,
  ModelGatewayError,
  ModelRequestRejectedError,
  ModelRetriesExhaustedError,
  StructuredOutputRejectedError,
  type RejectionReason,
} from './errors.js';
export type { BackoffOptions } from './backoff.js';
export {
  cacheKey,
  canonicalJson,
  identify,
  requestHash,
  type CallIdentity,
  type RequestContent,
} from './cache-key.js';
export { extractJson, jsonSchemaResponseFormat } from './structured-output.js';
export type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
  ChatResult,
  ModelCall,
  RoleUsage,
  StructuredResult,
  TokenUsage,
} from './types.js';
