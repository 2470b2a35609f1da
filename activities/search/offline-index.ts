import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import type pg from 'pg';
import {
  MAX_CORPUS_BYTES,
  SearchDocumentSchema,
  type SearchDocument,
  type SearchHit,
} from '../../schemas/reasoning-search.js';
import { inTransaction } from '../store/db.js';
import { hasUnstorable } from '../store/storable.js';
import { SearchCorpusError } from './errors.js';

/** Documents written per INSERT while indexing. */
const BATCH = 500;
/** Bad lines named in an error; the count says how many more. */
const SHOWN_PROBLEMS = 5;

/** What {@link indexCorpus} did. */
export interface IndexCorpusResult {
  readonly collection: string;
  readonly documents: number;
  readonly sha256: string;
  /** False when the same file was indexed before under this name: nothing was written. */
  readonly changed: boolean;
}

/**
 * Indexes a JSONL corpus (one {@link SearchDocument} per line) as `collection`. The whole file is
 * checked before anything is written; a bad line or a duplicate id refuses the file, naming the
 * lines. Idempotent: the same file again writes nothing; another file replaces the collection's
 * documents in one transaction, so a search sees either the old documents or the new ones.
 */
export async function indexCorpus(
  pool: pg.Pool,
  collection: string,
  file: string,
): Promise<IndexCorpusResult> {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (error) {
    throw new SearchCorpusError(
      collection,
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  if (size > MAX_CORPUS_BYTES) {
    throw new SearchCorpusError(
      collection,
      `${file} is ${size} bytes, over the ${MAX_CORPUS_BYTES} a collection may hold`,
    );
  }
  const { sha256, count } = await checkCorpus(collection, file);
  return inTransaction(pool, async (tx) => {
    // One indexer per collection at a time; the second finds the first's work done.
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`search_collection:${collection}`]);
    const { rows } = await tx.query<{ sha256: string }>(
      'SELECT sha256 FROM search_collections WHERE name = $1',
      [collection],
    );
    if (rows[0]?.sha256 === sha256) return { collection, documents: count, sha256, changed: false };
    await tx.query('DELETE FROM search_documents WHERE collection = $1', [collection]);
    await tx.query(
      `INSERT INTO search_collections (name, source, sha256, documents) VALUES ($1, $2, $3, $4)
       ON CONFLICT (name) DO UPDATE SET source = $2, sha256 = $3, documents = $4, indexed_at = now()`,
      [collection, file, sha256, count],
    );
    let batch: SearchDocument[] = [];
    const reread = createHash('sha256');
    for await (const { raw, document } of corpusLines(file)) {
      reread.update(raw);
      if (!document) continue;
      batch.push(document);
      if (batch.length === BATCH) {
        await insertBatch(tx, collection, batch);
        batch = [];
      }
    }
    if (batch.length > 0) await insertBatch(tx, collection, batch);
    // The checked file must be the written one (the transaction rolls back otherwise).
    if (reread.digest('hex') !== sha256)
      throw new SearchCorpusError(collection, `${file} changed while it was indexed`);
    return { collection, documents: count, sha256, changed: true };
  });
}

/** Reads the whole file once: its hash and document count, or every problem in it. */
async function checkCorpus(collection: string, file: string): Promise<{ sha256: string; count: number }> {
  const hash = createHash('sha256');
  const ids = new Map<string, number>();
  const problems: string[] = [];
  let count = 0;
  for await (const { line, raw, document, problem } of corpusLines(file)) {
    hash.update(raw);
    if (problem) problems.push(`line ${line}: ${problem}`);
    else if (document) {
      const first = ids.get(document.id);
      if (first !== undefined)
        problems.push(`line ${line}: id ${JSON.stringify(document.id)} repeats line ${first}`);
      else ids.set(document.id, line);
      count += 1;
    }
  }
  if (problems.length > 0) {
    const more = problems.length > SHOWN_PROBLEMS ? `; and ${problems.length - SHOWN_PROBLEMS} more` : '';
    throw new SearchCorpusError(
      collection,
      `${file} was not indexed: ${problems.slice(0, SHOWN_PROBLEMS).join('; ')}${more}`,
    );
  }
  if (count === 0) throw new SearchCorpusError(collection, `${file} holds no document`);
  return { sha256: hash.digest('hex'), count };
}

interface CorpusLine {
  readonly line: number;
  readonly raw: Buffer;
  readonly document?: SearchDocument;
  readonly problem?: string;
}

/** The lines of a corpus file, each parsed; blank lines are skipped. */
async function* corpusLines(file: string): AsyncGenerator<CorpusLine> {
  let pending = Buffer.alloc(0);
  let line = 0;
  const parse = (raw: Buffer): CorpusLine | null => {
    line += 1;
    const text = raw.toString('utf8').trim();
    if (text === '') return { line, raw };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { line, raw, problem: 'not JSON' };
    }
    const parsed = SearchDocumentSchema.safeParse(value);
    if (!parsed.success) {
      return {
        line,
        raw,
        problem: parsed.error.issues.map((i) => `${i.path.join('.') || 'line'}: ${i.message}`).join(', '),
      };
    }
    const { title, text: body, id, url } = parsed.data;
    if ([title, body, id, url ?? ''].some(hasUnstorable))
      return { line, raw, problem: 'holds a NUL or an unpaired surrogate' };
    return { line, raw, document: parsed.data };
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    pending = Buffer.concat([pending, chunk]);
    for (let newline = pending.indexOf(10); newline >= 0; newline = pending.indexOf(10)) {
      const parsed = parse(pending.subarray(0, newline + 1));
      pending = pending.subarray(newline + 1);
      if (parsed) yield parsed;
    }
  }
  if (pending.length > 0) {
    const parsed = parse(pending);
    if (parsed) yield parsed;
  }
}

async function insertBatch(
  tx: pg.PoolClient,
  collection: string,
  batch: readonly SearchDocument[],
): Promise<void> {
  await tx.query(
    `INSERT INTO search_documents (collection, doc_id, title, body, url)
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[])`,
    [
      collection,
      batch.map((d) => d.id),
      batch.map((d) => d.title),
      batch.map((d) => d.text),
      batch.map((d) => d.url ?? null),
    ],
  );
}

/**
 * The `topK` documents of `collection` that best match `query`, best first. Any of the query's
 * words may match (a question names more words than its answer's document holds): the words are
 * stemmed and joined with OR, stop words dropped; documents are ranked by ts_rank (title words
 * weigh more), ties by id, and each comes with a snippet of its text around the matched words.
 */
export async function searchOffline(
  pool: pg.Pool,
  collection: string,
  query: string,
  topK: number,
): Promise<SearchHit[]> {
  const known = await pool.query('SELECT 1 FROM search_collections WHERE name = $1', [collection]);
  if (known.rowCount === 0) {
    throw new SearchCorpusError(
      collection,
      'it was never indexed; run indexSearchCorpus on its corpus first',
    );
  }
  const { rows } = await pool.query<{
    doc_id: string;
    title: string;
    url: string | null;
    score: number;
    snippet: string;
  }>(
    `WITH q AS (
       SELECT nullif(replace(plainto_tsquery('english', $2)::text, ' & ', ' | '), '')::tsquery AS query
     )
     SELECT d.doc_id, d.title, d.url, ts_rank(d.tsv, q.query, 1)::float8 AS score,
            ts_headline('english', d.body, q.query, 'MaxFragments=2, MinWords=8, MaxWords=30, StartSel="", StopSel=""') AS snippet
       FROM search_documents d, q
      WHERE d.collection = $1 AND q.query IS NOT NULL AND d.tsv @@ q.query
      ORDER BY score DESC, d.doc_id
      LIMIT $3`,
    [collection, query, topK],
  );
  return rows.map((row) => ({
    title: row.title,
    snippet: row.snippet,
    url: row.url,
    documentId: row.doc_id,
    score: row.score,
  }));
}
