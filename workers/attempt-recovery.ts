import { ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Runtime, type ActivityInterceptorsFactory, type Worker } from '@temporalio/worker';
import {
  AttemptJournal,
  WORKER_PROCESS_LOST,
  type LostAttempt,
  type ReclaimOutcome,
} from './attempt-journal.js';

/** A journal being opened or open, and how many workers of this process use it. */
interface SlotHold {
  readonly opened: Promise<AttemptJournal | undefined>;
  /** Set once `opened` resolves: the interceptor reads it synchronously. */
  journal?: AttemptJournal;
  users: number;
}

/**
 * Wires the attempt journal (attempt-journal.ts) into a worker: around its run, the slot is taken
 * and the previous process's lost attempts are failed before the worker polls; while it runs, an
 * activity interceptor records each attempt that has a heartbeat timeout. One journal per process,
 * namespace and task queue, shared by the workers of this process that poll it (they die together).
 */
export class AttemptRecovery {
  private readonly journals = new Map<string, SlotHold>();

  constructor(private readonly databaseUrl: string) {}

  /** The activity interceptor that records and forgets attempts (local ones and those without a heartbeat timeout: never). */
  readonly interceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      execute: async (input, next) => {
        const { info } = ctx;
        const journal =
          info.isLocal || !info.heartbeatTimeoutMs
            ? undefined
            : this.journalOf(info.activityNamespace, info.taskQueue);
        if (!journal) return next(input);
        const recorded = journal.record(info);
        try {
          return await next(input);
        } finally {
          void journal.forget(recorded, info.taskToken);
        }
      },
    },
  });

  /** Runs `run` (the worker's run) with this process's slot at the worker's place held. */
  async around(worker: Worker, run: () => Promise<void>): Promise<void> {
    const { namespace, taskQueue } = worker.options;
    const key = keyOf(namespace, taskQueue);
    let entry = this.journals.get(key);
    if (!entry) {
      const opening: SlotHold = { opened: this.open(worker), users: 0 };
      void opening.opened.then((journal) => (opening.journal = journal));
      this.journals.set(key, (entry = opening));
    }
    entry.users += 1;
    try {
      await entry.opened; // the slot is held and the lost attempts failed before the worker polls
      await run();
    } finally {
      entry.users -= 1;
      if (entry.users === 0) {
        this.journals.delete(key);
        await (await entry.opened)?.close();
      }
    }
  }

  private journalOf(namespace: string, taskQueue: string): AttemptJournal | undefined {
    return this.journals.get(keyOf(namespace, taskQueue))?.journal;
  }

  /** Takes a slot and fails what its previous process lost; undefined when that cannot be done. */
  private async open(worker: Worker): Promise<AttemptJournal | undefined> {
    const logger = Runtime.instance().logger;
    const warn = (message: string, meta?: Record<string, unknown>) => logger.warn(message, meta);
    const place = { namespace: worker.options.namespace, taskQueue: worker.options.taskQueue };
    let journal: AttemptJournal | undefined;
    try {
      journal = await AttemptJournal.open(this.databaseUrl, place, warn);
      if (!journal) return undefined;
      const lost = await journal.lostAttempts();
      if (lost.length === 0) return journal;
      const counts = await journal.reclaim(lost, (attempt) =>
        failLostAttempt(worker, journal!.slot, attempt),
      );
      logger.info(
        `worker slot ${journal.slot}: ${lost.length} activity attempt(s) of a previous process that died; ` +
          `${counts.failed} failed now so Temporal retries them at once, ${counts.gone} had already ended` +
          (counts.unreached ? `, ${counts.unreached} left to their heartbeat timeout` : ''),
        { slot: journal.slot, ...counts },
      );
      return journal;
    } catch (error) {
      // The journal only speeds recovery up: without it, heartbeat timeouts still notice a death.
      warn('attempt journal unavailable; a killed worker is noticed by heartbeat timeouts only', {
        error: (error as Error).message,
      });
      await journal?.close();
      return undefined;
    }
  }
}

async function failLostAttempt(worker: Worker, slot: string, attempt: LostAttempt): Promise<ReclaimOutcome> {
  const failure = ApplicationFailure.retryable(
    `the worker process (pid ${attempt.pid}, slot ${slot}) running attempt ${attempt.attempt} of ${attempt.activityType} ` +
      'died; its successor failed the attempt so that it is retried now instead of after its heartbeat timeout',
    WORKER_PROCESS_LOST,
  );
  try {
    await worker.client!.activity.fail(attempt.taskToken, failure);
    return 'failed';
  } catch (error) {
    if (error instanceof ActivityNotFoundError) return 'gone';
    throw error;
  }
}

const keyOf = (namespace: string, taskQueue: string) => `${namespace}\u0000${taskQueue}`;
