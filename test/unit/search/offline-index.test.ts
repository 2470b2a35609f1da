import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../deploy/paths.js';
import { createSearchActivities, SearchCorpusError } from '../../../activities/search/index.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';

/**
 * The offline search index on the machine's PostgreSQL, over the corpus the project ships
 * (examples/search/corpus.jsonl, 36 short documents written for these tests).
 */

const CORPUS = path.join(REPO_ROOT, 'examples', 'search', 'corpus.jsonl');

describe('the offline search index (PostgreSQL full-text)', () => {
  let db: TestDatabase;
  let dir: string;
  let activities: ReturnType<typeof createSearchActivities>;
  const offline = { kind: 'offline', collection: 'facts' } as const;
  const top = async (q: string, topK = 3) =>
    (await activities.searchDocuments({ backend: offline, query: q, topK })).map((hit) => hit.documentId);

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-search-'));
    activities = createSearchActivities(db.url);
    await activities.indexSearchCorpus({ collection: 'facts', path: CORPUS });
  });
  afterAll(async () => {
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('indexes the shipped corpus once: the same file again writes nothing', async () => {
    const again = await activities.indexSearchCorpus({ collection: 'facts', path: CORPUS });
    expect(again).toMatchObject({ collection: 'facts', documents: 36, changed: false });
    const [row] = await query<{ n: number }>(
      db.url,
      "SELECT count(*)::int AS n FROM search_documents WHERE collection = 'facts'",
    );
    expect(row!.n).toBe(36);
  });

  it('finds the document that answers a question, best first', async () => {
    expect((await top('Who discovered penicillin?'))[0]).toBe('penicillin');
    expect((await top('What is the capital of Australia?'))[0]).toBe('canberra');
    expect((await top('deepest lake in the world'))[0]).toBe('lake-baikal');
    expect((await top('Which element has atomic number 79?'))[0]).toBe('gold');
    expect((await top('first compiler navy admiral'))[0]).toBe('grace-hopper');
    // Stemming: "mountains" and "highest" match "mountain" and "highest".
    expect((await top('highest mountains above sea level', 2)).sort()).toEqual(['k2', 'mount-everest']);
  });

  it('gives title, snippet around the matched words, address and score, at most topK', async () => {
    const hits = await activities.searchDocuments({
      backend: offline,
      query: 'Apollo 11 Moon landing',
      topK: 2,
    });
    expect(hits.length).toBeLessThanOrEqual(2);
    expect(hits[0]).toMatchObject({
      title: 'Apollo 11',
      documentId: 'moon-landing',
      url: 'https://example.org/wiki/moon-landing',
    });
    expect(hits[0]!.snippet).toMatch(/Moon/);
    expect(hits[0]!.score).toBeGreaterThan(0);
  });

  it('answers a query of stop words or unknown words with no results', async () => {
    expect(await top('the of and which')).toEqual([]);
    expect(await top('zyxwvut qqqq')).toEqual([]);
  });

  it('through the search tool: numbered results for the policy, a tool error for bad arguments', async () => {
    const found = await activities.searchTool({
      backend: offline,
      arguments: JSON.stringify({ query: 'Gutenberg printing' }),
      topK: 1,
    });
    expect(found.content).toMatch(
      /^\[1\] Printing press\n.*Gutenberg.*\n\(https:\/\/example\.org\/wiki\/printing-press\)$/s,
    );
    const none = await activities.searchTool({ backend: offline, arguments: '{"query": "qqqq"}' });
    expect(none).toEqual({ content: 'No results for "qqqq". Try other words.', hits: [] });
    for (const raw of ['nope', '{}', '{"q": "x"}', '{"query": ""}']) {
      const refused = await activities.searchTool({ backend: offline, arguments: raw });
      expect(refused.hits).toBeNull();
      expect(refused.content).toMatch(/^Error: the search tool was not run: /);
    }
  });

  it('replaces a collection with another file in one go', async () => {
    const file = path.join(dir, 'small.jsonl');
    await writeFile(
      file,
      '{"id": "a", "title": "Alpha", "text": "The quick brown fox."}\n\n{"id": "b", "text": "A lazy dog sleeps."}\n',
    );
    await activities.indexSearchCorpus({ collection: 'small', path: file });
    expect(await activities.indexSearchCorpus({ collection: 'small', path: file })).toMatchObject({
      changed: false,
    });
    await writeFile(file, '{"id": "c", "text": "Foxes hunt at night."}\n');
    expect(await activities.indexSearchCorpus({ collection: 'small', path: file })).toMatchObject({
      documents: 1,
      changed: true,
    });
    const hits = await activities.searchDocuments({
      backend: { kind: 'offline', collection: 'small' },
      query: 'fox',
    });
    expect(hits.map((h) => h.documentId)).toEqual(['c']);
  });

  it('indexes the same file from two workers at once without a duplicate', async () => {
    const results = await Promise.all([
      createSearchActivities(db.url).indexSearchCorpus({ collection: 'twice', path: CORPUS }),
      createSearchActivities(db.url).indexSearchCorpus({ collection: 'twice', path: CORPUS }),
    ]);
    expect(results.map((r) => r.changed).sort()).toEqual([false, true]);
    const [row] = await query<{ n: number }>(
      db.url,
      "SELECT count(*)::int AS n FROM search_documents WHERE collection = 'twice'",
    );
    expect(row!.n).toBe(36);
  });

  it('refuses a bad corpus whole, naming its lines, and writes nothing', async () => {
    const file = path.join(dir, 'bad.jsonl');
    await writeFile(
      file,
      [
        '{"id": "ok", "text": "fine"}',
        'not json',
        '{"id": "x"}',
        '{"id": "ok", "text": "again"}',
        '{"id": "n", "text": "nul \\u0000 here"}',
      ].join('\n'),
    );
    const error = await activities
      .indexSearchCorpus({ collection: 'bad', path: file })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SearchCorpusError);
    const message = (error as Error).message;
    expect(message).toContain('line 2: not JSON');
    expect(message).toContain('line 3: text:');
    expect(message).toContain('line 4: id "ok" repeats line 1');
    expect(message).toContain('line 5: holds a NUL');
    expect(await query(db.url, "SELECT 1 FROM search_collections WHERE name = 'bad'")).toEqual([]);
    await writeFile(file, '\n\n');
    await expect(activities.indexSearchCorpus({ collection: 'bad', path: file })).rejects.toThrow(
      'holds no document',
    );
  });

  it('refuses a search of a collection never indexed', async () => {
    await expect(
      activities.searchDocuments({ backend: { kind: 'offline', collection: 'unknown' }, query: 'x' }),
    ).rejects.toThrow(SearchCorpusError);
  });
});
