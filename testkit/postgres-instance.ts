/**
 * A PostgreSQL instance of a test's or benchmark's own: its own data directory (a fresh `initdb`
 * in a temp dir) and port, run from the machine's PostgreSQL binaries, trust auth on 127.0.0.1,
 * its postmaster a child process of the caller, stopped and restarted by its PID and removed
 * afterwards. A test that stops or restarts PostgreSQL uses one of these, never the machine's
 * cluster: restarting that drops every other connection on the machine (other tests, other
 * engineers' work, a developer's own stack).
 *
 * Binaries: MOCKWORLD_PG_BIN if set, else the newest /usr/lib/postgresql/<version>/bin (Debian,
 * Ubuntu), else the directory of `initdb` / `pg_config --bindir` on the PATH. initdb and postgres
 * refuse to run as root; as root (a CI container) they run as the `postgres` OS user (else
 * `nobody`), which owns the data directory.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, rmSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.js';

const run = promisify(execFile);

/** How the postmaster is stopped: fast = SIGINT (abort transactions, checkpoint), immediate = SIGQUIT (crash, recovery at start). */
export type PostgresStopMode = 'fast' | 'immediate';

const STOP_SIGNAL: Record<PostgresStopMode, NodeJS.Signals> = { fast: 'SIGINT', immediate: 'SIGQUIT' };

export interface PostgresInstanceOptions {
  /** Server settings (`-c name=value`) on top of the defaults below. */
  readonly settings?: Readonly<Record<string, string>>;
  readonly log?: (line: string) => void;
  /**
   * Serve a test host network (testkit/hosts.ts) too: listen on `address` besides 127.0.0.1 and
   * trust connections from `allow` (CIDR), the hosts' subnet.
   */
  readonly network?: { readonly address: string; readonly allow: string };
}

/** A running (or stopped, between `stop` and `start`) instance. */
export interface PostgresInstance {
  readonly port: number;
  readonly dataDir: string;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`: the admin URL (trust auth). */
  readonly adminUrl: string;
  /** PID of the running postmaster; undefined while stopped. */
  readonly pid: number | undefined;
  /** The server log (every start appends to it). */
  readonly logFile: string;
  start(): Promise<void>;
  /** Signals the postmaster by its PID and waits until it has exited. */
  stop(mode?: PostgresStopMode): Promise<void>;
  /** stop(mode), then start on the same data directory and port. */
  restart(mode?: PostgresStopMode): Promise<void>;
  /** Stops it (immediate) and deletes its directory. Idempotent. */
  remove(): Promise<void>;
}

/**
 * Light settings for a test server: small shared memory, no fsync (a crash of the process loses
 * nothing the kernel holds; only a crash of the machine would), room for the connections of a
 * few worker processes and their pools. Commits stay synchronous: an immediate stop must not
 * lose a commit that was acknowledged.
 */
const DEFAULT_SETTINGS: Record<string, string> = {
  listen_addresses: '127.0.0.1',
  max_connections: '200',
  shared_buffers: '32MB',
  fsync: 'off',
  full_page_writes: 'off',
  logging_collector: 'off',
};

/** initdb, start, wait until it answers; on failure nothing is left behind. */
export async function startPostgresInstance(
  options: PostgresInstanceOptions = {},
): Promise<PostgresInstance> {
  const log = options.log ?? (() => undefined);
  const bin = await postgresBinDir();
  const owner = await serverUser();
  const root = await mkdtemp(path.join(os.tmpdir(), 'mockworld-pg-'));
  const dataDir = path.join(root, 'data');
  const socketDir = root; // Unix socket and lock file here, not in the machine's /var/run/postgresql
  const logFile = path.join(root, 'postgres.log');
  if (owner) await chown(root, owner.uid, owner.gid);

  let child: ChildProcess | undefined;
  let exited: Promise<void> | undefined;
  let port = 0;
  let removed = false;

  // A harness that dies without cleaning up (an uncaught error, process.exit) still takes its
  // postmaster along: it would otherwise keep the port and the directory.
  const onExit = () => {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.on('exit', onExit);

  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};

  const startOnce = async () => {
    const settings = {
      ...DEFAULT_SETTINGS,
      ...(options.network ? { listen_addresses: `127.0.0.1,${options.network.address}` } : {}),
      ...options.settings,
      port: String(port),
      unix_socket_directories: socketDir,
    };
    const args = ['-D', dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
    const out = openSync(logFile, 'a');
    const started = spawn(path.join(bin, 'postgres'), args, { ...asOwner, stdio: ['ignore', out, out] });
    closeSync(out);
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    let gone = false;
    void exited.then(() => (gone = true));
    const deadline = Date.now() + 60_000;
    while (!(await answers(`postgres://postgres@127.0.0.1:${port}/postgres`))) {
      if (gone || Date.now() > deadline) {
        if (!gone) started.kill('SIGQUIT');
        await exited;
        const tail = (await readFile(logFile, 'utf8').catch(() => '')).slice(-2_000);
        throw new Error(
          `own PostgreSQL on port ${port} ${gone ? 'exited' : 'did not answer within 60 s'}; log ${logFile}:\n${tail}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  const instance: PostgresInstance = {
    get port() {
      return port;
    },
    dataDir,
    get adminUrl() {
      return `postgres://postgres@127.0.0.1:${port}/postgres`;
    },
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    logFile,
    async start() {
      if (removed) throw new Error('this PostgreSQL instance was removed');
      if (instance.pid !== undefined) return;
      await startOnce();
    },
    async stop(mode: PostgresStopMode = 'fast') {
      const current = child;
      if (!current || instance.pid === undefined) return;
      current.kill(STOP_SIGNAL[mode]);
      const timer = setTimeout(() => current.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
      // Backends outlive a SIGKILLed postmaster only briefly; none may hold the port at the next start.
    },
    async restart(mode: PostgresStopMode = 'fast') {
      await instance.stop(mode);
      await startOnce();
    },
    async remove() {
      if (removed) return;
      removed = true;
      await instance.stop('immediate').catch(() => undefined);
      process.off('exit', onExit);
      await rm(root, { recursive: true, force: true });
    },
  };

  try {
    const init = await run(
      path.join(bin, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync'],
      { ...asOwner, maxBuffer: 4 * 1024 * 1024 },
    ).catch((error: Error & { stderr?: string }) => {
      throw new Error(`initdb in ${dataDir} failed: ${error.stderr || error.message}`);
    });
    void init;
    if (options.network)
      await appendFile(path.join(dataDir, 'pg_hba.conf'), `host all all ${options.network.allow} trust\n`);
    // The port was free a moment ago; another process may take it first: try a few.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await startOnce();
        break;
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
    log(
      `own PostgreSQL (${path.basename(path.dirname(bin))}) on 127.0.0.1:${port}, pid ${instance.pid}, data ${dataDir}`,
    );
    return instance;
  } catch (error) {
    await instance.remove();
    throw error;
  }
}

/** One connection and `SELECT 1`; false on any error. */
async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The directory holding initdb and postgres (see the module comment). */
export async function postgresBinDir(): Promise<string> {
  const explicit = process.env.MOCKWORLD_PG_BIN;
  if (explicit) return explicit;
  const debian = '/usr/lib/postgresql';
  const versions = await readdir(debian).catch(() => [] as string[]);
  for (const version of versions.sort((a, b) => Number(b) - Number(a))) {
    const dir = path.join(debian, version, 'bin');
    if (await exists(path.join(dir, 'initdb'))) return dir;
  }
  for (const probe of [
    async () => path.dirname((await run('sh', ['-c', 'command -v initdb'])).stdout.trim()),
    async () => (await run('pg_config', ['--bindir'])).stdout.trim(),
  ]) {
    const dir = await probe().catch(() => '');
    if (dir && dir !== '.' && (await exists(path.join(dir, 'initdb')))) return dir;
  }
  throw new Error(
    'no PostgreSQL server binaries (initdb, postgres) found under /usr/lib/postgresql/<version>/bin or on the PATH; ' +
      'install the PostgreSQL server package or set MOCKWORLD_PG_BIN',
  );
}

/** As root: the OS user the server runs as (postgres, else nobody); otherwise undefined (ourselves). */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  for (const name of ['postgres', 'nobody']) {
    const line = passwd.split('\n').find((l) => l.startsWith(`${name}:`));
    const [, , uid, gid] = line?.split(':') ?? [];
    if (uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}
