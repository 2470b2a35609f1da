import {
  ModelEndpointSchema,
  SamplingSchema,
  type ModelEndpoint,
  type ModelEndpointInput,
} from '../../../schemas/model-endpoint.js';
import type { ModelCall } from '../../../activities/llm/index.js';
import type { ModelServer } from '../../../testkit/model-server.js';
import { query } from '../../../testkit/database.js';

/**
 * An endpoint on the test server. Give each test its own `model` name: limiters and cache keys
 * are per (base URL, model), so tests sharing a server stay independent.
 */
export function endpointOf(
  server: ModelServer,
  model: string,
  overrides: Partial<ModelEndpointInput> = {},
): ModelEndpoint {
  return ModelEndpointSchema.parse({
    baseUrl: server.url,
    model,
    timeoutMs: 5_000,
    maxRetries: 4,
    ...overrides,
  });
}

/** Deterministic sampling with a small completion budget. */
export const sampling = SamplingSchema.parse({ temperature: 0, maxTokens: 64 });

/** A teacher call of run `runId` asking `text` of `model` on the test server. */
export function teacherCall(
  server: ModelServer,
  runId: string,
  model: string,
  text: string,
  extra: Partial<ModelCall> = {},
): ModelCall {
  return {
    endpoint: endpointOf(server, model),
    messages: [system('teacher'), { role: 'user', content: text }],
    sampling,
    runId,
    role: 'teacher',
    ...extra,
  };
}

/** A system message carrying the test server's role marker. */
export function system(role: string, text = 'You are a test model.'): { role: 'system'; content: string } {
  return { role: 'system', content: `${text}\nrole: ${role}` };
}

export { query };

/** Rows of `llm_calls` for a cache key. */
export async function callRows(url: string, cacheKey: string) {
  return query<{
    prompt_tokens: number;
    completion_tokens: number;
    upstream_attempts: number;
    run_id: string | null;
    role: string | null;
  }>(url, 'SELECT * FROM llm_calls WHERE cache_key = $1', [cacheKey]);
}
