import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { closePools, dropDatabase, getPool } from '../activities/store/db.js';
import { migrate } from '../activities/store/migrate.js';

/** The machine's PostgreSQL the test databases are made in. */
export const ADMIN_URL =
  process.env.MOCKWORLD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh, migrated PostgreSQL database for one test file; `drop()` removes it. */
export interface TestDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/**
 * Creates a uniquely named database on the real local PostgreSQL (or on the server of `adminUrl`,
 * e.g. a test's own instance from postgres-instance.ts) and migrates it.
 */
export async function createTestDatabase(prefix = 'mw_test', adminUrl = ADMIN_URL): Promise<TestDatabase> {
  const url = new URL(adminUrl);
  url.pathname = `/${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const connection = url.toString();
  await migrate(connection);
  return {
    url: connection,
    async drop() {
      await getPool(connection)
        .end()
        .catch(() => undefined);
      await closePools();
      await dropDatabase(connection);
    },
  };
}

/** Runs one query on a short-lived connection, independent of the pools under test. */
export async function query<T extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  // A server that goes away (a restart the test makes) fails the query in flight; without a
  // listener the client's 'error' event would also crash the process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}
