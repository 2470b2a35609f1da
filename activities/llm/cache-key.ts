import { createHash } from 'node:crypto';
import type { ModelEndpoint, Sampling } from '../../schemas/model-endpoint.js';
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
  ModelCall,
} from './types.js';

/**
 * JSON with object keys sorted at every depth, so two requests that differ only in key order hash
 * the same. `undefined` members are dropped, as `JSON.stringify` does.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const source = value as Record<string, unknown>;
    // fromEntries defines own properties: assigning `sorted["__proto__"]` would set the prototype
    // instead and drop the key, so {"__proto__": x, "a": 1} and {"a": 1} would hash the same.
    return Object.fromEntries(
      Object.keys(source)
        .sort()
        .filter((key) => source[key] !== undefined)
        .map((key) => [key, sortKeys(source[key])]),
    );
  }
  return value;
}

/** Hex sha256 of a string. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** What the model sees: everything that can change the answer of one request. */
export interface RequestContent {
  readonly messages: readonly ChatCompletionMessageParam[];
  readonly tools?: readonly ChatCompletionTool[];
  readonly toolChoice?: ChatCompletionToolChoiceOption;
  readonly responseFormat?: unknown;
  readonly sampling: Sampling;
}

/** sha256 of the canonical JSON of the request content. */
export function requestHash(content: RequestContent): string {
  return sha256(
    canonicalJson({
      messages: content.messages,
      tools: content.tools?.length ? content.tools : undefined,
      // Absent when unset, so the keys of calls that never set it are what they always were.
      tool_choice: content.toolChoice,
      response_format: content.responseFormat,
      sampling: content.sampling,
    }),
  );
}

/** Trailing slashes do not make a different endpoint. */
export function normalizeBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** The identity of one logical call: endpoint, model, request, sample and policy weights. */
export interface CallIdentity {
  readonly endpoint: string;
  readonly model: string;
  readonly requestHash: string;
  readonly sampleIndex: number;
  readonly policyVersion: string;
}

/** sha256 over the call identity: the `llm_calls` primary key. */
export function cacheKey(identity: CallIdentity): string {
  return sha256(
    canonicalJson([
      identity.endpoint,
      identity.model,
      identity.requestHash,
      identity.sampleIndex,
      identity.policyVersion,
    ]),
  );
}

/** Builds the identity of a call from its parts; defaults: sample 0, policy 'base'. */
export function identify(
  endpoint: Pick<ModelEndpoint, 'baseUrl' | 'model'>,
  content: RequestContent,
  sampleIndex = 0,
  policyVersion = 'base',
): CallIdentity {
  return {
    endpoint: normalizeBaseUrl(endpoint.baseUrl),
    model: endpoint.model,
    requestHash: requestHash(content),
    sampleIndex,
    policyVersion,
  };
}

/** The identity of a model call sent with `responseFormat` (online or in a batch job alike). */
export function identifyCall(call: ModelCall, responseFormat?: unknown): CallIdentity {
  return identify(
    call.endpoint,
    {
      messages: call.messages,
      tools: call.tools,
      toolChoice: call.toolChoice,
      responseFormat,
      sampling: call.sampling,
    },
    call.sampleIndex ?? 0,
    call.policyVersion ?? 'base',
  );
}
