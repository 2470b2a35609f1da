import os from 'node:os';
import type { Info } from '@temporalio/activity';
import pg from 'pg';
import { getPool } from '../activities/store/db.js';

/**
 * The attempt journal: how a restarted worker process recovers the work its predecessor died with
 * in seconds instead of a heartbeat timeout.
 *
 * Temporal learns that a worker died only when the activities it was running miss their
 * heartbeat timeout (20 s for rollouts and synthesis stages, docs/bounds-and-retries.md "Retries"); until then nothing
 * retries them. But a supervisor (systemd, Kubernetes, the chaos harness) restarts a killed
 * process within seconds, on the same host. So each process holds a *worker slot* (host, namespace,
 * task queue, and a number: several workers may share a host and a queue) for its lifetime, as a
 * PostgreSQL advisory lock on a connection of its own, and records each running attempt that has a
 * heartbeat timeout under that slot (table `worker_attempts`), deleting the row when the attempt
 * ends. The lock goes with the process's connection when it dies; the next process to take the
 * slot finds the dead one's rows and fails each attempt through its task token with the retryable
 * `WorkerProcessLost`, and Temporal retries them at once under their retry policy.
 *
 * Safe by construction: a slot is held by one live process at a time, so no live attempt is failed
 * (a holder whose lock connection drops takes its slot again once PostgreSQL is back; a process
 * that takes the slot in between would fail the holder's live attempts, which are then retried:
 * the activities' idempotent side effects make that a waste, not an error); a token whose attempt already ended, or already timed out and was retried, is refused
 * by the server as not found and changes nothing. Anything the journal cannot do (PostgreSQL
 * unreachable, all slots taken, a node that never comes back) leaves the heartbeat timeout to
 * notice, as without it.
 */

/** The failure type a reclaimed attempt fails with (retryable: it is not in any policy's list). */
export const WORKER_PROCESS_LOST = 'WorkerProcessLost';
/** Advisory-lock class of worker slots; the two-int key space is apart from the migration lock's. */
export const SLOT_LOCK_CLASS = 7_300_422;
/** Slots tried per host, namespace and queue: a worker past this many runs without a journal. */
const MAX_SLOTS = 64;
/** A failing journal write is logged at most this often (each one falls back to the heartbeat timeout). */
const WARN_EVERY_MS = 60_000;

/** Where a worker polls: its slots are per host, namespace and task queue. */
export interface WorkerPlace {
  readonly namespace: string;
  readonly taskQueue: string;
}

/** An attempt of the previous process of this slot, as the journal recorded it. */
export interface LostAttempt {
  readonly taskToken: Uint8Array;
  readonly activityType: string;
  readonly workflowId: string | null;
  readonly attempt: number;
  readonly pid: number;
}

/** What became of one lost attempt: failed now, or already ended on the server. */
export type ReclaimOutcome = 'failed' | 'gone';

type Log = (message: string, meta?: Record<string, unknown>) => void;

/** One process's journal for one namespace and task queue: its slot, and its attempts' rows. */
export class AttemptJournal {
  private lastWarnedAt = 0;
  private closed = false;
  /** The activities' pool: the journal's rows cost no connection of their own. */
  private readonly pool: pg.Pool;

  private constructor(
    private readonly databaseUrl: string,
    private lock: pg.Client,
    /** The slot this process holds, e.g. `node-1/default/mockworld-cpu#0`. */
    readonly slot: string,
    private readonly warn: Log,
  ) {
    this.pool = getPool(databaseUrl);
    this.guard(lock);
  }

  /**
   * Takes the first free slot of this host at `place`; undefined when every slot is taken (the
   * worker then runs without a journal). Throws when PostgreSQL cannot be reached.
   */
  static async open(
    databaseUrl: string,
    place: WorkerPlace,
    warn: Log,
    host: string = os.hostname(),
  ): Promise<AttemptJournal | undefined> {
    const lock = await connectLock(databaseUrl);
    try {
      for (let n = 0; n < MAX_SLOTS; n++) {
        const slot = `${host}/${place.namespace}/${place.taskQueue}#${n}`;
        if (await tryLock(lock, slot)) return new AttemptJournal(databaseUrl, lock, slot, warn);
      }
    } catch (error) {
      await lock.end().catch(() => undefined);
      throw error;
    }
    await lock.end().catch(() => undefined);
    warn(`all ${MAX_SLOTS} worker slots of this host are taken; running without an attempt journal`, {
      ...place,
    });
    return undefined;
  }

  /**
   * Takes the slot's lock again when its connection drops (a PostgreSQL restart): while it is
   * down, a process starting on this host could take the slot and fail this one's live attempts.
   */
  private guard(lock: pg.Client): void {
    lock.once('end', () => {
      if (this.closed) return;
      this.warn('worker slot lock connection lost; taking the slot again', { slot: this.slot });
      void this.relock();
    });
  }

  private async relock(): Promise<void> {
    for (let wait = 1_000; !this.closed; wait = Math.min(2 * wait, 10_000)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      let lock: pg.Client | undefined;
      try {
        lock = await connectLock(this.databaseUrl);
        if (this.closed || !(await tryLock(lock, this.slot))) {
          await lock.end();
          if (!this.closed)
            this.warn('worker slot taken by another process while its lock was lost', { slot: this.slot });
          return;
        }
        this.lock = lock;
        this.guard(lock);
        return;
      } catch {
        await lock?.end().catch(() => undefined); // PostgreSQL not back yet
      }
    }
  }

  /** The attempts the slot's previous process left running when it died. */
  async lostAttempts(): Promise<LostAttempt[]> {
    const { rows } = await this.pool.query<{
      task_token: Buffer;
      activity_type: string;
      workflow_id: string | null;
      attempt: number;
      pid: number;
    }>(
      `SELECT task_token, activity_type, workflow_id, attempt, pid FROM worker_attempts
        WHERE worker_slot = $1 ORDER BY started_at`,
      [this.slot],
    );
    return rows.map((r) => ({
      taskToken: new Uint8Array(r.task_token),
      activityType: r.activity_type,
      workflowId: r.workflow_id,
      attempt: r.attempt,
      pid: r.pid,
    }));
  }

  /**
   * Fails each lost attempt through `fail` (a few at a time) and deletes its row; returns how many
   * were failed and how many had already ended. An attempt `fail` cannot reach stays to its heartbeat timeout.
   */
  async reclaim(
    lost: readonly LostAttempt[],
    fail: (attempt: LostAttempt) => Promise<ReclaimOutcome>,
  ): Promise<Record<ReclaimOutcome | 'unreached', number>> {
    const counts = { failed: 0, gone: 0, unreached: 0 };
    const queue = [...lost];
    const next = async (): Promise<void> => {
      for (let attempt = queue.shift(); attempt; attempt = queue.shift()) {
        try {
          counts[await fail(attempt)] += 1;
        } catch (error) {
          counts.unreached += 1;
          this.warn('could not fail a lost activity attempt; its heartbeat timeout will', {
            activityType: attempt.activityType,
            workflowId: attempt.workflowId,
            error: (error as Error).message,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, lost.length) }, next));
    await this.pool.query('DELETE FROM worker_attempts WHERE worker_slot = $1 AND task_token = ANY($2)', [
      this.slot,
      lost.map((a) => Buffer.from(a.taskToken)),
    ]);
    return counts;
  }

  /**
   * Records a running attempt under this process's slot. Not awaited by the activity: an attempt
   * whose row is not written yet when the process dies is noticed by its heartbeat timeout.
   */
  record(info: Info): Promise<void> {
    return this.pool
      .query(
        `INSERT INTO worker_attempts (task_token, worker_slot, activity_type, workflow_id, activity_id, attempt, pid)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
        [
          Buffer.from(info.taskToken),
          this.slot,
          info.activityType,
          info.workflowExecution?.workflowId ?? null,
          info.activityId,
          info.attempt,
          process.pid,
        ],
      )
      .then(
        () => undefined,
        (error: Error) => this.warnThrottled('record', error),
      );
  }

  /** Deletes an ended attempt's row, once its insert has settled. */
  async forget(recorded: Promise<void>, taskToken: Uint8Array): Promise<void> {
    await recorded;
    await this.pool
      .query('DELETE FROM worker_attempts WHERE task_token = $1', [Buffer.from(taskToken)])
      .catch((error: Error) => this.warnThrottled('delete', error));
  }

  /** Releases the slot (the process's attempts have all ended by then). */
  async close(): Promise<void> {
    this.closed = true;
    await this.lock.end().catch(() => undefined);
  }

  private warnThrottled(what: string, error: Error): void {
    if (Date.now() - this.lastWarnedAt < WARN_EVERY_MS) return;
    this.lastWarnedAt = Date.now();
    this.warn(`attempt journal: could not ${what} a row (a death now is noticed by the heartbeat timeout)`, {
      slot: this.slot,
      error: error.message,
    });
  }
}

/** A connection of its own for a slot's lock: the lock lives exactly as long as it does. */
async function connectLock(databaseUrl: string): Promise<pg.Client> {
  const lock = new pg.Client({ connectionString: databaseUrl });
  lock.on('error', () => undefined); // a dropped connection ends it: AttemptJournal.guard takes the slot again
  await lock.connect();
  return lock;
}

async function tryLock(lock: pg.Client, slot: string): Promise<boolean> {
  const { rows } = await lock.query<{ taken: boolean }>(
    'SELECT pg_try_advisory_lock($1, hashtext($2)) AS taken',
    [SLOT_LOCK_CLASS, slot],
  );
  return rows[0]?.taken === true;
}
