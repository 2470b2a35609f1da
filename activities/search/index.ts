import {
  IndexCorpusInputSchema,
  SearchBackendSchema,
  type IndexCorpusInput,
  type SearchBackendInput,
  type SearchHit,
  type SearchRequest,
} from '../../schemas/reasoning-search.js';
import { activityCancellation } from '../cancellation.js';
import { resolveDataFile } from '../data-files.js';
import { getPool } from '../store/db.js';
import { indexCorpus, type IndexCorpusResult } from './offline-index.js';
import { callSearchTool, search, type SearchToolOutcome } from './tool.js';

export {
  SEARCH_ERRORS,
  SearchApiRejectedError,
  SearchApiUnavailableError,
  SearchCorpusError,
} from './errors.js';
export { searchHttp } from './http-search.js';
export { indexCorpus, searchOffline, type IndexCorpusResult } from './offline-index.js';
export { callSearchTool, search, searchContent, SEARCH_TOOL, type SearchToolOutcome } from './tool.js';

/** Input of the `searchTool` activity: one tool call of the policy. */
export interface SearchToolInput {
  readonly backend: SearchBackendInput;
  /** The tool call's `arguments`, as the policy wrote them (JSON text). */
  readonly arguments: string;
  /** Results shown (the seed's top-k of 5). */
  readonly topK?: number;
}

/** The search tool's activities, bound to one database (the offline index lives there). */
export function createSearchActivities(databaseUrl: string) {
  const deps = () => ({ pool: getPool(databaseUrl), signal: activityCancellation() });
  return {
    /** Indexes a JSONL corpus as a collection (idempotent: the same file writes nothing). */
    async indexSearchCorpus(input: IndexCorpusInput): Promise<IndexCorpusResult> {
      const { collection, path } = IndexCorpusInputSchema.parse(input);
      return indexCorpus(
        getPool(databaseUrl),
        collection,
        resolveDataFile(path, `the corpus of search collection ${collection}`),
      );
    },
    /** One search, through the backend the request names. */
    async searchDocuments(request: SearchRequest): Promise<SearchHit[]> {
      return search(deps(), request);
    },
    /** One call of the policy's `search` tool: its message, and the results behind it. */
    async searchTool(input: SearchToolInput): Promise<SearchToolOutcome> {
      return callSearchTool(deps(), SearchBackendSchema.parse(input.backend), input.arguments, input.topK);
    },
  };
}

export type SearchActivities = ReturnType<typeof createSearchActivities>;
