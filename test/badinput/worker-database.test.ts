import { describe, expect, it } from 'vitest';
import { runCli } from '../../testkit/cli.js';

/**
 * `mockworld worker` with no DATABASE_URL and no terminal (as a service, container or job starts
 * it) refuses to write into the local default database, which may be someone else's, and says
 * what to set. (An empty variable counts as unset; execFile gives the CLI no terminal.)
 */
describe('a worker started without DATABASE_URL and without a terminal', () => {
  it('refuses, naming DATABASE_URL and --local-database, before it connects anywhere', async () => {
    const result = await runCli({ DATABASE_URL: '', TEMPORAL_ADDRESS: '127.0.0.1:1' }, 'worker');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('DATABASE_URL is not set, and no terminal is attached');
    expect(result.stderr).toContain('pass --local-database to use postgres://');
    expect(result.stderr).not.toContain('worker polling');
  });
});
