/**
 * The model layer: cached, rate-limited, retried calls to OpenAI-compatible endpoints, with
 * validated structured outputs and a usage ledger in PostgreSQL.
 */
export { createModelClient, usageByRole, type ModelClient, type ModelClientOptions } from './model-client';
export {
  ModelRequestRejectedError,
  ModelRetriesExhaustedError,
  StructuredOutputRejectedError,
  type RejectionReason,
} from './errors';
export type { BackoffOptions } from './backoff';
export {
  cacheKey,
  canonicalJson,
  identify,
  requestHash,
  type CallIdentity,
  type RequestContent,
} from './cache-key';
export { extractJson, jsonSchemaResponseFormat } from './structured-output';
export type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatResult,
  ModelCall,
  RoleUsage,
  StructuredResult,
  TokenUsage,
} from './types';
