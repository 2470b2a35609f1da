import type pg from 'pg';
import type { FunctionTool } from '../../schemas/function-tool.js';
import {
  SearchRequestSchema,
  SearchToolArgsSchema,
  type SearchBackend,
  type SearchHit,
  type SearchRequest,
} from '../../schemas/reasoning-search.js';
import { searchHttp } from './http-search.js';
import { searchOffline } from './offline-index.js';

/** The `search` tool as the policy is offered it (OpenAI function calling). */
export const SEARCH_TOOL: FunctionTool = {
  type: 'function',
  function: {
    name: 'search',
    description:
      'Searches for documents and returns the top results: each with its title, a snippet and its address. ' +
      'Use short keyword queries; search again with other words when the results do not answer the question.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'What to search for.' } },
      required: ['query'],
    },
  },
};

/** What a search needs from the worker. */
export interface SearchDependencies {
  readonly pool: pg.Pool;
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
}

/** One search through whichever backend the request names: one interface for both. */
export async function search(deps: SearchDependencies, request: SearchRequest): Promise<SearchHit[]> {
  const { backend, query, topK } = SearchRequestSchema.parse(request);
  return backend.kind === 'offline'
    ? searchOffline(deps.pool, backend.collection, query, topK)
    : searchHttp(backend, query, topK, deps.env, deps.signal);
}

/** What one call of the `search` tool gives back. */
export interface SearchToolOutcome {
  /** The tool message the policy reads next. */
  readonly content: string;
  /** The results behind it; null when the arguments were unusable. */
  readonly hits: SearchHit[] | null;
}

/**
 * One call of the `search` tool with the policy's raw arguments (the JSON string of a tool call).
 * Unusable arguments and a query that finds nothing are the tool's answer; a backend that fails
 * throws (the search errors), since that is no fault of the policy's.
 */
export async function callSearchTool(
  deps: SearchDependencies,
  backend: SearchBackend,
  rawArguments: string,
  topK = 5,
): Promise<SearchToolOutcome> {
  let args: unknown;
  try {
    args = JSON.parse(rawArguments);
  } catch {
    return {
      content: 'Error: the search tool was not run: its arguments are not JSON; send {"query": "<words>"}.',
      hits: null,
    };
  }
  const parsed = SearchToolArgsSchema.safeParse(args);
  if (!parsed.success) {
    return {
      content:
        'Error: the search tool was not run: it takes exactly {"query": "<words>"} with a query of 1-2000 characters.',
      hits: null,
    };
  }
  const hits = await search(deps, { backend, query: parsed.data.query, topK });
  return { content: searchContent(parsed.data.query, hits), hits };
}

/** The tool message of a search: numbered results, snippets only (as the seed gave the model). */
export function searchContent(query: string, hits: readonly SearchHit[]): string {
  if (hits.length === 0) return `No results for "${query}". Try other words.`;
  return hits
    .map((hit, i) =>
      [`[${i + 1}] ${hit.title || '(untitled)'}`, hit.snippet, hit.url ? `(${hit.url})` : '']
        .filter(Boolean)
        .join('\n'),
    )
    .join('\n\n');
}
