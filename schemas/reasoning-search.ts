import { z } from 'zod';
import { credentialFreeUrl } from './url-credentials.js';

/**
 * The `search` tool of reasoning tasks (activities/search): one interface over two backends, an
 * offline index over a document collection the user supplies (PostgreSQL full-text search) and an
 * HTTP search API whose key comes from the environment. The seed (App. A) used the Google Search
 * API with the country set to "us" and the top 5 results, and gave the model only the snippets.
 */

/** Name of an indexed collection: also what a spec names. */
export const CollectionNameSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_.-]{0,99}$/,
    'must be 1-100 lowercase letters, digits, _ . or -, starting with a letter or digit',
  );

/** One line of a corpus file (JSONL) the user supplies. */
export const SearchDocumentSchema = z
  .object({
    id: z.string().min(1).max(200),
    title: z.string().max(1_000).default(''),
    text: z.string().min(1).max(200_000),
    url: z.string().min(1).max(2_000).optional(),
  })
  .strict();

export type SearchDocument = z.infer<typeof SearchDocumentSchema>;

/** The largest corpus file one indexing call reads. */
export const MAX_CORPUS_BYTES = 512 * 1024 * 1024;

/** Input of the `indexSearchCorpus` activity. */
export const IndexCorpusInputSchema = z
  .object({
    collection: CollectionNameSchema,
    /** The corpus file: absolute, or found like every spec data file (activities/data-files.ts). */
    path: z.string().min(1),
  })
  .strict();

export type IndexCorpusInput = z.infer<typeof IndexCorpusInputSchema>;

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** Where searches go. */
export const SearchBackendSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('offline'),
      /** A collection indexed before by `indexSearchCorpus`. */
      collection: CollectionNameSchema,
    })
    .strict(),
  z
    .object({
      kind: z.literal('http'),
      /**
       * A search endpoint that takes `POST {"q", "gl", "num"}` and answers
       * `{"organic": [{"title", "link", "snippet"}]}` (the Google results format of Serper and
       * compatible services).
       */
      url: credentialFreeUrl("name the key's variable in apiKeyEnv"),
      /** The environment variable holding the key; the key itself is never in a spec. */
      apiKeyEnv: z.string().regex(ENV_NAME, 'must name an environment variable, e.g. SEARCH_API_KEY'),
      /** The request header that carries the key. */
      apiKeyHeader: z
        .string()
        .regex(/^[A-Za-z0-9-]{1,64}$/)
        .default('X-API-KEY'),
      /** Country of the results (the seed's "us"). */
      country: z
        .string()
        .regex(/^[a-z]{2}$/)
        .default('us'),
      timeoutMs: z.int().min(100).max(120_000).default(15_000),
    })
    .strict(),
]);

export type SearchBackend = z.infer<typeof SearchBackendSchema>;
export type SearchBackendInput = z.input<typeof SearchBackendSchema>;

/** One search. */
export const SearchRequestSchema = z
  .object({
    backend: SearchBackendSchema,
    query: z.string().trim().min(1).max(2_000),
    /** How many results (the seed's top-k of 5). */
    topK: z.int().min(1).max(20).default(5),
  })
  .strict();

export type SearchRequest = z.input<typeof SearchRequestSchema>;

/** One result, whichever backend gave it. */
export const SearchHitSchema = z.object({
  title: z.string(),
  snippet: z.string(),
  url: z.string().nullable(),
  /** The document's id in an offline collection; null for an HTTP result. */
  documentId: z.string().nullable(),
  /** The backend's relevance score; null when it gives none. */
  score: z.number().nullable(),
});

export type SearchHit = z.infer<typeof SearchHitSchema>;

/** The part of an HTTP search API's answer that is read; anything else in it is ignored. */
export const SearchApiResponseSchema = z
  .object({
    organic: z
      .array(
        z
          .object({
            title: z.string().max(2_000).default(''),
            link: z.string().max(4_000).optional(),
            snippet: z.string().max(10_000).default(''),
          })
          .loose(),
      )
      .max(100)
      .default([]),
  })
  .loose();

/** The arguments the policy passes to the `search` tool. */
export const SearchToolArgsSchema = z.object({ query: z.string().trim().min(1).max(2_000) }).strict();
