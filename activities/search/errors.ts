/**
 * Errors of the search tool. Each declares its Temporal failure `type` (its `name`) and whether a
 * retry can help (activities/error-class.ts). A query that finds nothing is no error: the tool
 * says so to the policy. Pure: workflow code may import this module.
 */

/**
 * Thrown when a corpus file cannot be indexed (a line that is not a document, a duplicate id, a
 * file over its size) or a search names a collection that was never indexed. Not retryable: the
 * file or the spec must change first.
 */
export class SearchCorpusError extends Error {
  static readonly type = 'SearchCorpusError';
  static readonly retryable = false;
  override readonly name = SearchCorpusError.type;
  constructor(
    /** The collection concerned. */
    readonly collection: string,
    /** What is wrong, with line numbers where a line is. */
    readonly detail: string,
  ) {
    super(`Search collection ${collection}: ${detail}`);
  }
}

/**
 * Thrown when an HTTP search API cannot be used as configured: its key variable is unset, or it
 * refuses the request (401, 403, 400: a key or a request that another attempt would send again).
 * Not retryable: the environment or the spec must change first.
 */
export class SearchApiRejectedError extends Error {
  static readonly type = 'SearchApiRejectedError';
  static readonly retryable = false;
  override readonly name = SearchApiRejectedError.type;
  constructor(
    readonly url: string,
    readonly detail: string,
  ) {
    super(`Search API ${url} cannot be used: ${detail}`);
  }
}

/**
 * Thrown when an HTTP search API did not answer usably this time: unreachable, timed out, rate
 * limited (429), a server error (5xx) or an answer that is not its results format. Retryable: the
 * activity's retry policy spaces the attempts out.
 */
export class SearchApiUnavailableError extends Error {
  static readonly type = 'SearchApiUnavailableError';
  static readonly retryable = true;
  override readonly name = SearchApiUnavailableError.type;
  constructor(
    readonly url: string,
    readonly detail: string,
  ) {
    super(`Search API ${url} did not answer usably: ${detail}`);
  }
}

/** Every error of the search tool, for the retry policies and the retry-table test. */
export const SEARCH_ERRORS = [SearchCorpusError, SearchApiRejectedError, SearchApiUnavailableError] as const;
