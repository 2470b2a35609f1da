import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePools } from '../../activities/store/db.js';
import { migrate } from '../../activities/store/migrate.js';
import { AttemptJournal, SLOT_LOCK_CLASS } from '../../workers/attempt-journal.js';
import { query } from '../../testkit/database.js';
import { startPostgresInstance, type PostgresInstance } from '../../testkit/postgres-instance.js';
import { eventually } from '../../testkit/temporal.js';

/**
 * The attempt journal's worker slots across a PostgreSQL restart, on an instance of the test's own
 * (the restart drops every slot's lock connection). The end-to-end case (a worker killed and
 * restarted) is worker-restart.test.ts.
 */
describe('worker slots of the attempt journal', () => {
  let pg: PostgresInstance;
  let url: string;
  const place = { namespace: 'default', taskQueue: 'journal-test' };
  const warnings: string[] = [];
  const warn = (message: string) => void warnings.push(message);
  const slotsHeld = async () =>
    (
      await query<{ n: number }>(
        url,
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND granted`,
        [SLOT_LOCK_CLASS],
      )
    )[0]!.n;

  beforeAll(async () => {
    pg = await startPostgresInstance();
    url = pg.adminUrl.replace(/\/postgres$/, '/journal');
    await migrate(url);
  });
  afterAll(async () => {
    await closePools();
    await pg?.remove();
  });

  it('gives each process of a host and queue its own slot, and takes it again after a restart', async () => {
    const first = (await AttemptJournal.open(url, place, warn, 'host-1'))!;
    const second = (await AttemptJournal.open(url, place, warn, 'host-1'))!;
    const elsewhere = (await AttemptJournal.open(url, place, warn, 'host-2'))!;
    expect([first.slot, second.slot, elsewhere.slot]).toEqual([
      'host-1/default/journal-test#0',
      'host-1/default/journal-test#1',
      'host-2/default/journal-test#0',
    ]);
    expect(await slotsHeld()).toBe(3);

    await pg.restart('immediate');
    await eventually(async () => (await slotsHeld()) === 3, 60_000);
    expect(warnings.filter((w) => w.includes('lock connection lost'))).toHaveLength(3);
    // Each holder took its own slot back: a process starting now gets the next one.
    const third = (await AttemptJournal.open(url, place, warn, 'host-1'))!;
    expect(third.slot).toBe('host-1/default/journal-test#2');

    for (const journal of [first, second, elsewhere, third]) await journal.close();
    await eventually(async () => (await slotsHeld()) === 0, 10_000);
    const reopened = (await AttemptJournal.open(url, place, warn, 'host-1'))!;
    expect(reopened.slot).toBe('host-1/default/journal-test#0');
    await reopened.close();
  }, 180_000);
});
