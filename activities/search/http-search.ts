import {
  SearchApiResponseSchema,
  type SearchBackend,
  type SearchHit,
} from '../../schemas/reasoning-search.js';
import { SearchApiRejectedError, SearchApiUnavailableError } from './errors.js';

/** The HTTP backend's settings, defaults applied. */
export type HttpSearchBackend = Extract<SearchBackend, { kind: 'http' }>;

/** The largest answer read from a search API; a larger one is refused unread. */
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/**
 * The top `topK` web results for `query` from an HTTP search API in the Google results format
 * (`POST {"q", "gl", "num"}` → `{"organic": [{"title", "link", "snippet"}]}`), as the seed used it:
 * country `backend.country`, snippets only. The key is read from `env[backend.apiKeyEnv]` at each
 * call and sent in `backend.apiKeyHeader`; it never enters a spec, a payload or an error message.
 */
export async function searchHttp(
  backend: HttpSearchBackend,
  query: string,
  topK: number,
  env: NodeJS.ProcessEnv = process.env,
  signal?: AbortSignal,
): Promise<SearchHit[]> {
  const key = env[backend.apiKeyEnv];
  if (!key)
    throw new SearchApiRejectedError(
      backend.url,
      `the environment variable ${backend.apiKeyEnv} (its key) is not set`,
    );
  const timeout = AbortSignal.timeout(backend.timeoutMs);
  let response: Response;
  try {
    response = await fetch(backend.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [backend.apiKeyHeader]: key },
      body: JSON.stringify({ q: query, gl: backend.country, num: topK }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const reason = timeout.aborted
      ? `no answer within ${backend.timeoutMs} ms`
      : `unreachable (${causeOf(error)})`;
    throw new SearchApiUnavailableError(backend.url, reason);
  }
  const body = await readBounded(response, backend.url);
  if (response.status === 401 || response.status === 403) {
    throw new SearchApiRejectedError(
      backend.url,
      `it refused the key in ${backend.apiKeyEnv} (HTTP ${response.status})`,
    );
  }
  if (response.status === 429 || response.status >= 500) {
    throw new SearchApiUnavailableError(backend.url, `HTTP ${response.status}`);
  }
  if (!response.ok)
    throw new SearchApiRejectedError(
      backend.url,
      `it refused the request (HTTP ${response.status}: ${body.slice(0, 200)})`,
    );
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new SearchApiUnavailableError(backend.url, 'its answer is not JSON');
  }
  const parsed = SearchApiResponseSchema.safeParse(value);
  if (!parsed.success)
    throw new SearchApiUnavailableError(
      backend.url,
      `its answer is not a results list (${parsed.error.issues[0]?.message})`,
    );
  return parsed.data.organic.slice(0, topK).map((result) => ({
    title: result.title,
    snippet: result.snippet,
    url: result.link ?? null,
    documentId: null,
    score: null,
  }));
}

async function readBounded(response: Response, url: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > MAX_RESPONSE_BYTES) {
    await response.body?.cancel();
    throw new SearchApiUnavailableError(url, `its answer is ${declared} bytes, over ${MAX_RESPONSE_BYTES}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  for (let read = await reader?.read(); read && !read.done; read = await reader!.read()) {
    size += read.value.length;
    if (size > MAX_RESPONSE_BYTES) {
      await reader!.cancel().catch(() => undefined);
      throw new SearchApiUnavailableError(url, `its answer is over ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
