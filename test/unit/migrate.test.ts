import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrations, migrate } from '../../activities/store/migrate.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db.drop());

  it('applies every shipped migration once and nothing on a second run', async () => {
    const shipped = await listMigrations();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query('SELECT version FROM schema_migrations ORDER BY version');
    await client.end();
    expect(rows.map((r) => r.version)).toEqual(shipped.map((m) => m.version));
    expect(await migrate(db.url)).toEqual([]);
  });

  it('serializes concurrent migrators without error', async () => {
    const results = await Promise.all([migrate(db.url), migrate(db.url), migrate(db.url)]);
    expect(results.flat()).toEqual([]);
  });
});
