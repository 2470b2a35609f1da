import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
} from 'openai/resources/chat/completions';
import { Agent, errors as undiciErrors, request } from 'undici';
import type { ModelEndpoint } from '../../schemas/model-endpoint.js';
import { backoffDelayMs, retryAfterMs, sleep, type BackoffOptions } from './backoff.js';
import { normalizeBaseUrl } from './cache-key.js';
import { ModelRequestRejectedError, ModelRetriesExhaustedError } from './errors.js';
import { estimateTokens, limiterFor } from './rate-limiter.js';
import type { ModelCall } from './types.js';

/** Sent as the key to endpoints that need none (vLLM, llama.cpp), which still expect a bearer header. */
const NO_KEY = 'unused';

/**
 * Header naming the pipeline role of a request (teacher, policy, tool-simulator, ...). Servers
 * ignore it; it lets a gateway or the test model server tell roles apart without reading prompts.
 */
export const ROLE_HEADER = 'X-Mockworld-Role';

/** The role header for a call, or none: a value that is not printable ASCII is not sent. */
function roleHeaders(role: string | undefined): Record<string, string> {
  return role && /^[\x20-\x7e]{1,200}$/.test(role) ? { [ROLE_HEADER]: role } : {};
}

/**
 * Keep-alive connections shared by every endpoint of this process, unbounded per origin: the
 * endpoint limiter bounds what is in flight. undici's `request` rather than `fetch` (or the
 * `openai` client, which calls `fetch`): measured on 2 cores at 256 callers, fetch spends about
 * 2 ms of CPU per call in web streams against 0.3 ms (bench/model-layer.ts).
 */
const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });

/**
 * The request headers. The key is read from `process.env[endpoint.apiKeyEnv]` at call time and
 * never travels in a spec or payload.
 */
function requestHeaders(endpoint: ModelEndpoint, role: string | undefined): Record<string, string> {
  const apiKey = (endpoint.apiKeyEnv && process.env[endpoint.apiKeyEnv]) || NO_KEY;
  return {
    'content-type': 'application/json',
    accept: 'application/json',
    authorization: `Bearer ${apiKey}`,
    ...roleHeaders(role),
  };
}

/**
 * The request body sent upstream. With a sampling seed, sample i is sent with seed + i: the same
 * seed for every sample of a GRPO group would make them identical on servers that honour seeds.
 * `max_tokens` (not `max_completion_tokens`) because every OpenAI-compatible server accepts it.
 */
export function chatRequestBody(
  call: ModelCall,
  responseFormat?: unknown,
): ChatCompletionCreateParamsNonStreaming {
  const { sampling } = call;
  return {
    model: call.endpoint.model,
    messages: [...call.messages],
    ...(call.tools?.length ? { tools: [...call.tools] } : {}),
    ...(call.toolChoice !== undefined ? { tool_choice: call.toolChoice } : {}),
    ...(responseFormat
      ? { response_format: responseFormat as ChatCompletionCreateParamsNonStreaming['response_format'] }
      : {}),
    temperature: sampling.temperature,
    top_p: sampling.topP,
    max_tokens: sampling.maxTokens,
    ...(sampling.seed !== undefined ? { seed: sampling.seed + (call.sampleIndex ?? 0) } : {}),
    ...(sampling.frequencyPenalty !== undefined ? { frequency_penalty: sampling.frequencyPenalty } : {}),
    ...(sampling.presencePenalty !== undefined ? { presence_penalty: sampling.presencePenalty } : {}),
  };
}

/** Why one HTTP attempt failed, and whether another attempt may succeed. */
class AttemptFailure extends Error {
  constructor(
    readonly retryable: boolean,
    readonly reason: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(reason);
  }
}

/**
 * Response header naming the policy version whose weights answered (mockworld's policy server,
 * workers/trainer/mockworld_trainer/serving/http.py): a rollout can tell it was served by another
 * version than the one it was scheduled for.
 */
export const POLICY_VERSION_HEADER = 'x-policy-version';

/** A successful upstream answer. */
export interface UpstreamAnswer {
  readonly completion: ChatCompletion;
  /** The {@link POLICY_VERSION_HEADER} of the answer, when the server sent one (printable, at most 64 characters). */
  readonly servedVersion?: string;
  /** HTTP attempts made, the successful one included. */
  readonly attempts: number;
  /** From the first attempt's start to the answer, retries and backoff included. */
  readonly latencyMs: number;
}

/**
 * Sends a chat completion request within the endpoint's limits, retrying 429, 5xx, 408, timeouts,
 * connection errors and unparseable bodies with exponential backoff (or the endpoint's
 * Retry-After) up to `endpoint.maxRetries` times. Other 4xx fail at once with
 * {@link ModelRequestRejectedError}; exhausted retries with {@link ModelRetriesExhaustedError}.
 * An aborted `signal` rejects with its reason at any point. `role` travels as {@link ROLE_HEADER}.
 */
export async function completeUpstream(
  endpoint: ModelEndpoint,
  body: ChatCompletionCreateParamsNonStreaming,
  backoff: BackoffOptions,
  signal?: AbortSignal,
  role?: string,
): Promise<UpstreamAnswer> {
  const limiter = limiterFor(endpoint);
  const promptChars =
    JSON.stringify(body.messages).length + (body.tools ? JSON.stringify(body.tools).length : 0);
  const estimate = estimateTokens(body.max_tokens ?? 0, promptChars);
  const maxRetryAfterMs = backoff.maxRetryAfterMs ?? 300_000;
  let started: number | undefined;
  for (let attempt = 1; ; attempt++) {
    const permit = await limiter.acquire(estimate, signal);
    started ??= Date.now();
    let failure: AttemptFailure;
    try {
      const { completion, servedVersion } = await attemptOnce(endpoint, body, signal, role);
      const usage = completion.usage;
      permit.release(usage ? usage.prompt_tokens + usage.completion_tokens : undefined);
      return {
        completion,
        attempts: attempt,
        latencyMs: Date.now() - started,
        ...(servedVersion !== undefined ? { servedVersion } : {}),
      };
    } catch (error) {
      // Pause before freeing the slot, or the next waiter would be sent straight into the 429.
      if (error instanceof AttemptFailure && error.status === 429 && error.retryAfterMs !== undefined) {
        limiter.pause(Math.min(error.retryAfterMs, maxRetryAfterMs));
      }
      permit.release();
      if (!(error instanceof AttemptFailure)) throw error; // the caller aborted
      failure = error;
    }
    const url = normalizeBaseUrl(endpoint.baseUrl);
    if (!failure.retryable) {
      throw new ModelRequestRejectedError(url, endpoint.model, failure.status ?? 0, failure.reason);
    }
    if (attempt > endpoint.maxRetries) {
      throw new ModelRetriesExhaustedError(url, endpoint.model, attempt, failure.status, failure.reason);
    }
    let wait: number;
    if (failure.retryAfterMs !== undefined) {
      const asked = Math.min(failure.retryAfterMs, maxRetryAfterMs);
      // A little on top, never below what was asked, so the callers it paused do not return as one.
      wait = asked + Math.round(Math.random() * Math.min(1000, asked * 0.1));
    } else {
      wait = backoffDelayMs(attempt, backoff);
    }
    await sleep(wait, signal);
  }
}

/** One HTTP attempt bounded by `endpoint.timeoutMs`, headers and body included. */
async function attemptOnce(
  endpoint: ModelEndpoint,
  body: ChatCompletionCreateParamsNonStreaming,
  signal: AbortSignal | undefined,
  role: string | undefined,
): Promise<{ completion: ChatCompletion; servedVersion?: string }> {
  // One timer for headers and body: a server can also hang in the middle of the body.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`timed out after ${endpoint.timeoutMs} ms`));
  }, endpoint.timeoutMs);
  const onAbort = () => controller.abort(signal!.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await request(`${normalizeBaseUrl(endpoint.baseUrl)}/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: requestHeaders(endpoint, role),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const text = await response.body.text();
    const header = (name: string) => {
      const value = response.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    if (response.statusCode >= 400) throw statusFailure(response.statusCode, text, header);
    let completion: unknown;
    try {
      completion = JSON.parse(text);
    } catch (error) {
      throw new AttemptFailure(true, `unparseable response body: ${(error as Error).message}`, 200);
    }
    const version = header(POLICY_VERSION_HEADER);
    // Kept only when it can be a version (a hostile server's header is not stored).
    const servedVersion = version !== undefined && /^[\x21-\x7e]{1,64}$/.test(version) ? version : undefined;
    return {
      completion: checkCompletion(completion),
      ...(servedVersion ? { servedVersion } : {}),
    };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw classify(error, timedOut, endpoint.timeoutMs);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** An HTTP error status: 429, 408 and 5xx may succeed on another attempt (after Retry-After). */
function statusFailure(
  status: number,
  text: string,
  header: (name: string) => string | undefined,
): AttemptFailure {
  const retryable = status === 429 || status === 408 || status >= 500;
  const wait = retryable
    ? retryAfterMs({ get: (name: string) => header(name.toLowerCase()) ?? null })
    : undefined;
  return new AttemptFailure(retryable, `${status} ${errorMessage(text)}`, status, wait);
}

/** The server's own words for an error: OpenAI's `{error: {message}}`, else the body's start. */
function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message =
      typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (typeof message === 'string') return message.slice(0, 500);
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500) || 'status code (no body)';
}

/** A 2xx answer must have a first choice with a message; anything else is a broken body. */
function checkCompletion(completion: unknown): ChatCompletion {
  const choice = (completion as ChatCompletion | undefined)?.choices?.[0];
  if (typeof completion !== 'object' || !choice || typeof choice.message !== 'object' || !choice.message) {
    const shown = typeof completion === 'string' ? completion.slice(0, 200) : typeof completion;
    throw new AttemptFailure(true, `unparseable response body (no choices[0].message): ${shown}`, 200);
  }
  return completion as ChatCompletion;
}

function classify(error: unknown, timedOut: boolean, timeoutMs: number): AttemptFailure {
  if (error instanceof AttemptFailure) return error;
  if (timedOut) return new AttemptFailure(true, `timed out after ${timeoutMs} ms`);
  if (error instanceof undiciErrors.UndiciError || isSystemError(error)) {
    // Refused, reset or cut connections, a socket closed mid-body: another attempt may succeed.
    const { message, code } = error as Error & { code?: string };
    return new AttemptFailure(true, `connection error: ${message}${code ? ` (${code})` : ''}`);
  }
  // The status was fine but the body could not be read.
  return new AttemptFailure(true, `unparseable response body: ${String((error as Error)?.message ?? error)}`);
}

/** A Node system error (ECONNREFUSED, ECONNRESET, EPIPE, ...). */
function isSystemError(error: unknown): boolean {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string';
}
