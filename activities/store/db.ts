import pg from 'pg';
import { loadEnvironment } from '../../schemas/environment.js';
import { DatabaseNameError, DatabaseUnreachableError } from './errors.js';

export { DatabaseNameError, DatabaseUnreachableError, redactUrl } from './errors.js';

const pools = new Map<string, pg.Pool>();

/**
 * One shared pool per connection string and process. Activities call this instead of opening
 * their own connections, so a worker holds a bounded number of connections whatever its load.
 */
export function getPool(url: string = loadEnvironment().DATABASE_URL): pg.Pool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new pg.Pool({ connectionString: url, max: 20, idleTimeoutMillis: 10_000 });
    // An idle client that loses its server (PostgreSQL restarted) must not crash the worker.
    pool.on('error', () => undefined);
    pools.set(url, pool);
  }
  return pool;
}

/** Closes every pool of this process (tests and CLI exit). */
export async function closePools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.end().catch(() => undefined)));
}

/** SQLSTATEs of a server that is shutting down, restarting or not yet accepting connections. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03']);
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * True when `error` says PostgreSQL could not be reached or dropped the connection (a restart, a
 * failover), as opposed to a query the server refused: the same statement may succeed once it is back.
 */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || CONNECTION_CODES.has(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|not queryable|timeout exceeded when trying to connect/i.test(message);
}

/**
 * `error` as a DatabaseUnreachableError (where PostgreSQL was expected, and what to do) when it is
 * a failure to connect to the server of `url`; any other error unchanged. For the CLI, whose
 * commands would otherwise end on pg's bare "connect ECONNREFUSED".
 */
export function explainDatabaseError(error: unknown, url: string): unknown {
  const e = error as { code?: unknown; port?: unknown; hostname?: unknown } | null;
  if (typeof e?.code !== 'string' || !CONNECTION_CODES.has(e.code)) return error;
  let server: URL;
  try {
    server = new URL(url);
  } catch {
    return error;
  }
  // Only a failure to reach that server: Temporal or a model endpoint fail with the same codes.
  const ours = e.port === Number(server.port || 5432) || e.hostname === server.hostname;
  return ours ? new DatabaseUnreachableError(url, error) : error;
}

/**
 * Runs `fn`, and again while it fails with a connection error, for up to `withinMs` (backoff from
 * 250 ms to 2 s). For writes that must not be lost with the activity: e.g. the ledger row of a model
 * answer already paid for, which a retried activity would otherwise pay for again.
 */
export async function retryOnConnectionError<T>(
  fn: () => Promise<T>,
  signal?: AbortSignal,
  withinMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (let wait = 250; ; wait = Math.min(2 * wait, 2_000)) {
    try {
      return await fn();
    } catch (error) {
      if (!isConnectionError(error) || Date.now() + wait > deadline || signal?.aborted) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** Runs `fn` inside one transaction on one client; rolls back on any error. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Creates the database named in `url` if it does not exist (connecting to the `postgres` database). */
export async function ensureDatabase(url: string): Promise<void> {
  const { name, client } = adminClientFor(url);
  try {
    await client.connect();
  } catch (error) {
    throw new DatabaseUnreachableError(url, error);
  }
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      // Identifiers cannot be parameters; the name was checked against a strict pattern above.
      await client.query(`CREATE DATABASE "${name}"`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}

/** Drops a database (tests). */
export async function dropDatabase(url: string): Promise<void> {
  const { name, client } = adminClientFor(url);
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * The database named in `url`, checked against a strict pattern (identifiers cannot be query
 * parameters, so only such names are ever interpolated), and an unconnected client of the same
 * server's `postgres` database to create or drop it from.
 */
function adminClientFor(url: string): { name: string; client: pg.Client } {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name)) throw new DatabaseNameError(name);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  return { name, client: new pg.Client({ connectionString: admin.toString() }) };
}
