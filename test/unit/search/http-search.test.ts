import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSearchActivities,
  SearchApiRejectedError,
  SearchApiUnavailableError,
  searchHttp,
} from '../../../activities/search/index.js';
import { SearchBackendSchema } from '../../../schemas/reasoning-search.js';
import { freePort } from '../../../testkit/ports.js';

/**
 * The HTTP search adapter against a local scripted search API (a real HTTP server on loopback):
 * the request it sends (key header from the environment, country, top-k), the results it reads,
 * and how each failure is classed. No key ever appears in an error.
 */

const KEY = 'test-key-5f2c9a';

interface Seen {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: unknown;
}

/** Answers by the query: `status 503` answers 503, `slow` waits, `huge` sends 3 MiB, and so on. */
function scriptedApi(seen: Seen[]) {
  return http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      const body = JSON.parse(raw) as { q: string; num: number };
      seen.push({ headers: req.headers, body });
      const send = (status: number, payload: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(payload);
      };
      if (req.headers['x-api-key'] !== KEY) return send(401, '{"message": "invalid key"}');
      const status = /^status (\d+)$/.exec(body.q)?.[1];
      if (status) return send(Number(status), '{"message": "scripted"}');
      if (body.q === 'slow') return void setTimeout(() => send(200, '{"organic": []}'), 2_000);
      if (body.q === 'not json') return send(200, '<html>oops</html>');
      if (body.q === 'wrong shape') return send(200, '{"organic": "nothing"}');
      if (body.q === 'huge')
        return send(200, JSON.stringify({ organic: [], pad: 'x'.repeat(3 * 1024 * 1024) }));
      const organic = Array.from({ length: 8 }, (_, i) => ({
        title: `Result ${i + 1} for ${body.q}`,
        link: `https://example.org/${i + 1}`,
        snippet: `Snippet ${i + 1}.`,
        position: i + 1,
      }));
      send(200, JSON.stringify({ searchParameters: { q: body.q }, organic }));
    });
  });
}

describe('the HTTP search API adapter', () => {
  const seen: Seen[] = [];
  const server = scriptedApi(seen);
  let url: string;
  const env = { SEARCH_API_KEY: KEY };
  const backend = (extra: Record<string, unknown> = {}) =>
    SearchBackendSchema.parse({ kind: 'http', url, apiKeyEnv: 'SEARCH_API_KEY', ...extra }) as Extract<
      ReturnType<typeof SearchBackendSchema.parse>,
      { kind: 'http' }
    >;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/search`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends the key from the environment, the country and top-k, and reads the snippets', async () => {
    const hits = await searchHttp(backend(), 'tallest mountain', 5, env);
    expect(seen.at(-1)!.headers['x-api-key']).toBe(KEY);
    expect(seen.at(-1)!.body).toEqual({ q: 'tallest mountain', gl: 'us', num: 5 });
    expect(hits).toHaveLength(5);
    expect(hits[0]).toEqual({
      title: 'Result 1 for tallest mountain',
      snippet: 'Snippet 1.',
      url: 'https://example.org/1',
      documentId: null,
      score: null,
    });
  });

  it('uses the header and country the spec names', async () => {
    await searchHttp(backend({ apiKeyHeader: 'X-Other-Key', country: 'de' }), 'q', 3, env).catch(
      () => undefined,
    );
    expect(seen.at(-1)!.headers['x-other-key']).toBe(KEY);
    expect(seen.at(-1)!.body).toMatchObject({ gl: 'de', num: 3 });
  });

  it('refuses to run without its key, sending nothing', async () => {
    const before = seen.length;
    const error = await searchHttp(backend(), 'q', 5, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SearchApiRejectedError);
    expect((error as Error).message).toContain('SEARCH_API_KEY');
    expect(seen.length).toBe(before);
  });

  it('classes a refused key and a bad request as not retryable, never showing the key', async () => {
    const refused = await searchHttp(backend(), 'q', 5, { SEARCH_API_KEY: 'wrong-key-1234' }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(SearchApiRejectedError);
    expect((refused as Error).message).toContain('HTTP 401');
    expect((refused as Error).message).not.toContain('wrong-key-1234');
    await expect(searchHttp(backend(), 'status 400', 5, env)).rejects.toThrow(SearchApiRejectedError);
    expect(SearchApiRejectedError.retryable).toBe(false);
  });

  it('classes rate limits, server errors, timeouts and unusable answers as retryable', async () => {
    for (const [q, words] of [
      ['status 429', 'HTTP 429'],
      ['status 503', 'HTTP 503'],
      ['not json', 'not JSON'],
      ['wrong shape', 'not a results list'],
      ['huge', 'bytes'],
    ] as const) {
      const error = await searchHttp(backend(), q, 5, env).catch((e: unknown) => e);
      expect(error, q).toBeInstanceOf(SearchApiUnavailableError);
      expect((error as Error).message, q).toContain(words);
    }
    const slow = await searchHttp(backend({ timeoutMs: 300 }), 'slow', 5, env).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(SearchApiUnavailableError);
    expect((slow as Error).message).toContain('no answer within 300 ms');
    const nobody = `http://127.0.0.1:${await freePort()}/search`;
    const closed = await searchHttp(backend({ url: nobody }), 'q', 5, env).catch((e: unknown) => e);
    expect((closed as Error).message).toContain('unreachable (ECONNREFUSED)');
    expect(SearchApiUnavailableError.retryable).toBe(true);
  });

  it('serves the search tool activity through the same interface as the offline index', async () => {
    process.env.SEARCH_API_KEY = KEY;
    try {
      const activities = createSearchActivities('postgres://unused@127.0.0.1:1/none');
      const outcome = await activities.searchTool({
        backend: { kind: 'http', url, apiKeyEnv: 'SEARCH_API_KEY' },
        arguments: JSON.stringify({ query: 'Ada Lovelace' }),
        topK: 2,
      });
      expect(outcome.content).toBe(
        '[1] Result 1 for Ada Lovelace\nSnippet 1.\n(https://example.org/1)\n\n[2] Result 2 for Ada Lovelace\nSnippet 2.\n(https://example.org/2)',
      );
    } finally {
      delete process.env.SEARCH_API_KEY;
    }
  });
});
