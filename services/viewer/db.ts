import pg from 'pg';

/**
 * The viewer's own pool: every session is read-only at the server (default_transaction_read_only),
 * so no page, whatever its query, can change a run's data.
 */
export function readOnlyPool(databaseUrl: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 4,
    idleTimeoutMillis: 10_000,
    options: '-c default_transaction_read_only=on -c statement_timeout=30000',
  });
  // A dropped idle connection (PostgreSQL restarted) must not end the viewer.
  pool.on('error', () => undefined);
  return pool;
}
