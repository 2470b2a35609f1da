import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { DatabaseUnreachableError, ensureDatabase, getPool, inTransaction } from './db.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Arbitrary constant: serializes concurrent migrators (several workers starting at once). */
const MIGRATION_LOCK_KEY = 7_300_422_001;

/** One migration file: `NNN_name.sql`, applied once, in order. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Lists the migrations shipped with this version of mockworld, in order. */
export async function listMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: await readFile(path.join(dir, file), 'utf8'),
    })),
  );
}

/**
 * Creates the database if needed and applies every migration not yet applied, each in its own
 * transaction, under an advisory lock. Idempotent: running it again applies nothing.
 * Returns the versions applied by this call.
 */
export async function migrate(url: string): Promise<number[]> {
  await ensureDatabase(url);
  const pool = getPool(url);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new DatabaseUnreachableError(url, error);
  }
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    for (const migration of await listMigrations()) {
      if (done.has(migration.version)) continue;
      await inTransaction(pool, async (tx) => {
        await tx.query(migration.sql);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      });
      applied.push(migration.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    client.release();
  }
  return applied;
}
