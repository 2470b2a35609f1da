import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPool } from '../../activities/store/db.js';
import { MAX_RECORDED_REFUSALS } from '../../activities/synthesis/checked-lines.js';
import {
  loadPersonas,
  MAX_PERSONA_CHARS,
  MAX_PERSONA_LINE_BYTES,
} from '../../activities/synthesis/personas.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { lostOrAltered, snapshot } from './db-snapshot.js';

const line = (value: unknown) => JSON.stringify(value);

describe('hostile persona files', () => {
  let db: TestDatabase;
  let dir: string;
  const load = async (runId: string, lines: string[] | string, limit = 100, offset = 0) => {
    const file = path.join(dir, `${runId}.jsonl`);
    await writeFile(file, Array.isArray(lines) ? lines.join('\n') : lines);
    return loadPersonas(getPool(db.url), { runId, path: file, offset, limit });
  };
  const stored = (runId: string) =>
    query<{ idx: number; persona_id: string; persona: string }>(
      db.url,
      'SELECT idx, persona_id, persona FROM synthesis_personas WHERE run_id = $1 ORDER BY idx',
      [runId],
    );
  const refusals = async (runId: string) =>
    Object.fromEntries(
      (
        await query<{ line: number; reason: string }>(
          db.url,
          'SELECT line, reason FROM synthesis_persona_rejections WHERE run_id = $1 ORDER BY line',
          [runId],
        )
      ).map((r) => [r.line, r.reason]),
    );

  beforeAll(async () => {
    db = await createTestDatabase('mw_personas');
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-personas-'));
    await load('existing', [
      line({ id: 'a', persona: 'An archivist.' }),
      line({ id: 'b', persona: 'A baker.' }),
    ]);
  });
  afterAll(async () => {
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses empty, duplicated, enormous, malformed and unstorable lines, each with its line and reason', async () => {
    const before = await snapshot(db.url);
    const huge = 'x'.repeat(MAX_PERSONA_CHARS + 1);
    const rtl = 'A trader \u202eredart\u202c with zero\u200bwidth and e\u0301 🙂.';
    const lines = [
      line({ id: 'ok-1', persona: '  A nurse on night shifts.  ' }), // 1: kept, trimmed
      line({ id: 'empty', persona: '' }), // 2
      line({ id: 'blank', persona: ' \t\n ' }), // 3
      line({ id: 'ok-1', persona: 'Same id again.' }), // 4
      line({ id: 'huge', persona: huge }), // 5
      line({ id: '', persona: 'No id.' }), // 6
      line({ persona: 'No id at all.' }), // 7
      '{not json', // 8
      line(['an', 'array']), // 9
      line('a string'), // 10
      line({ id: 'nul', persona: 'before\u0000after' }), // 11
      line({ id: 'lone\ud800', persona: 'A lone surrogate in the id.' }), // 12
      line({ id: 'x'.repeat(201), persona: 'An id too long.' }), // 13
      '{"__proto__": {"id": "proto", "persona": "polluter"}, "persona": "inherits nothing"}', // 14
      line({ id: 42, persona: rtl }), // 15: kept verbatim, numeric id as text
      '', // 16: blank lines are skipped, not refused
      line({ id: 'ok-2', persona: 'A pilot.' }), // 17
      line({ id: 'late', persona: 'Past the limit.' }), // 18: never read (limit 3)
    ];
    const result = await load('hostile', lines, 3);
    expect(result.loaded).toBe(3);
    expect(await stored('hostile')).toEqual([
      { idx: 0, persona_id: 'ok-1', persona: 'A nurse on night shifts.' },
      { idx: 1, persona_id: '42', persona: rtl },
      { idx: 2, persona_id: 'ok-2', persona: 'A pilot.' },
    ]);
    expect(await refusals('hostile')).toEqual({
      2: 'empty persona',
      3: 'empty persona',
      4: 'duplicate id',
      5: `persona longer than ${MAX_PERSONA_CHARS} characters`,
      6: 'missing id',
      7: 'missing id',
      8: 'not JSON',
      9: 'not a JSON object',
      10: 'not a JSON object',
      11: 'NUL or unpaired surrogate character',
      12: 'NUL or unpaired surrogate character',
      13: 'id longer than 200 characters',
      14: 'missing id',
    });
    expect(result.rejected).toBe(13);
    expect(result.rejectedByReason['empty persona']).toBe(2);
    expect(Object.prototype).not.toHaveProperty('persona');
    expect(lostOrAltered(before, await snapshot(db.url))).toEqual([]);

    // A retry (the activity attempted again) changes nothing.
    const again = await snapshot(db.url);
    await load('hostile', lines, 3);
    expect(lostOrAltered(again, await snapshot(db.url))).toEqual([]);
    expect(await stored('hostile')).toHaveLength(3);
  });

  it('skips a ~10 MB line as it streams by, and reads on after it', async () => {
    const result = await load(
      'enormous',
      `${line({ id: 'big', persona: 'y'.repeat(10 * 1024 * 1024) })}\r\n${line({ id: 'after', persona: 'Read after it.' })}\r\n`,
    );
    expect(result).toMatchObject({ loaded: 1, rejected: 1 });
    expect(await refusals('enormous')).toEqual({ 1: `line longer than ${MAX_PERSONA_LINE_BYTES} bytes` });
    expect(await stored('enormous')).toEqual([{ idx: 0, persona_id: 'after', persona: 'Read after it.' }]);
  });

  it('counts every refused line but records a bounded number of them', async () => {
    const bad = Array.from({ length: MAX_RECORDED_REFUSALS + 500 }, () => '{').join('\n');
    const result = await load('many-bad', `${bad}\n${line({ id: 'z', persona: 'The only one.' })}\n`);
    expect(result).toMatchObject({ loaded: 1, rejected: MAX_RECORDED_REFUSALS + 500 });
    expect(Object.keys(await refusals('many-bad'))).toHaveLength(MAX_RECORDED_REFUSALS);
  });

  it('keeps an empty file, a file of blank lines and an offset past the end to zero personas', async () => {
    expect(await load('empty-file', '')).toEqual({ loaded: 0, rejected: 0, rejectedByReason: {} });
    expect(await load('blank-file', '\n\n   \n\t\n')).toEqual({
      loaded: 0,
      rejected: 0,
      rejectedByReason: {},
    });
    const past = await load('past-end', [line({ id: 'a', persona: 'A.' })], 10, 1e12);
    expect(past.loaded).toBe(0);
    await expect(
      loadPersonas(getPool(db.url), {
        runId: 'missing',
        path: path.join(dir, 'nope.jsonl'),
        offset: 0,
        limit: 1,
      }),
    ).rejects.toThrow(/Cannot read personas from .*nope\.jsonl: ENOENT/);
  });

  it('left the personas stored before untouched', async () => {
    expect(await stored('existing')).toEqual([
      { idx: 0, persona_id: 'a', persona: 'An archivist.' },
      { idx: 1, persona_id: 'b', persona: 'A baker.' },
    ]);
  });
});
