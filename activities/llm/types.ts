import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type { BatchWindow } from '../../schemas/model-batch.js';
import type { ModelEndpoint, Sampling } from '../../schemas/model-endpoint.js';

export type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
};

/** One logical model call. Everything that changes the answer is part of its cache key. */
export interface ModelCall {
  /** Where to send it; the key is read from `process.env[endpoint.apiKeyEnv]`, never passed here. */
  readonly endpoint: ModelEndpoint;
  /** The conversation, in OpenAI chat format. */
  readonly messages: readonly ChatCompletionMessageParam[];
  /** Function-calling tools offered to the model; tool calls come back untouched in `message`. */
  readonly tools?: readonly ChatCompletionTool[];
  /** Whether the model must call a tool, which one, or none (OpenAI `tool_choice`). Unset: the server's `auto`. */
  readonly toolChoice?: ChatCompletionToolChoiceOption;
  /** Sampling settings; with a `seed`, sample i is sent with seed + i so samples differ. */
  readonly sampling: Sampling;
  /** Which of several samples of the same request this is (GRPO groups, mean@k). Default 0. */
  readonly sampleIndex?: number;
  /** Version of the policy weights behind the endpoint; a new version never reuses old answers. Default 'base'. */
  readonly policyVersion?: string;
  /** Workflow id of the run that pays for the call (usage ledger). */
  readonly runId?: string;
  /** Pipeline role of the call (teacher, user-sim, tool-sim, judge, ...), for the usage ledger. */
  readonly role?: string;
  /** Cancels waiting, retrying and the HTTP request; the call then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
  /**
   * Send it in a provider batch job gathered by this window (activities/llm/batch) rather than at
   * once; not part of the identity: a call answered either way is the same answer.
   */
  readonly batch?: BatchWindow;
}

/** Token usage of one call as reported by the endpoint. */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** The answer to a {@link ModelCall}. Identical for every caller of the same key, except `cached`. */
export interface ChatResult {
  /** Cache key of the call (sha256 hex); also the primary key of its `llm_calls` row. */
  readonly cacheKey: string;
  /** The assistant message exactly as the endpoint returned it (content, tool_calls, refusal). */
  readonly message: ChatCompletionMessage;
  /** The endpoint's finish reason (`stop`, `length`, `tool_calls`, ...). */
  readonly finishReason: string;
  /**
   * The policy version whose weights answered, when the server names it (the `x-policy-version`
   * header of mockworld's policy server); absent otherwise.
   */
  readonly servedVersion?: string;
  /** Usage of the stored call; counted once in the ledger however often the answer is read. */
  readonly usage: TokenUsage;
  /** True when this invocation made no upstream call (found in the store or joined an in-flight call). */
  readonly cached: boolean;
  /** Upstream time of the stored call: first attempt to answer, retries and backoff included. */
  readonly latencyMs: number;
  /** HTTP attempts the stored call needed. */
  readonly attempts: number;
}

/** A validated structured output and the calls that produced it. */
export interface StructuredResult<T> {
  /** The parsed, schema-valid value. */
  readonly value: T;
  /** Cache key of the first call (the logical identity of the request). */
  readonly cacheKey: string;
  /** True when the first output was invalid and the repair call's output was accepted. */
  readonly repaired: boolean;
  /** The message whose content was accepted. */
  readonly message: ChatCompletionMessage;
  /** Usage summed over the first call and the repair call. */
  readonly usage: TokenUsage;
  /** True when no call involved went upstream in this invocation. */
  readonly cached: boolean;
  /** Upstream time summed over the calls involved. */
  readonly latencyMs: number;
}

/** Tokens and calls of one role in one run, read from the ledger. */
export interface RoleUsage {
  /** Role recorded with the calls; null for calls made without one. */
  readonly role: string | null;
  /** Stored (distinct, paid) calls. */
  readonly calls: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** HTTP attempts, retries included. */
  readonly attempts: number;
  /** Structured outputs rejected after repair. */
  readonly rejections: number;
  /** What the role's paid calls cost (USD, endpoint prices); null when none was priced. */
  readonly costUsd: number | null;
}
