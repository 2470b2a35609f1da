import type pg from 'pg';
import { getPool } from '../../store/db.js';
import { cacheKey, identifyCall } from '../cache-key.js';
import { findCall, resultOfStored } from '../call-store.js';
import type { CallCompleter } from '../model-client.js';
import { chatRequestBody } from '../upstream.js';
import { dispatchOnce } from './dispatcher.js';
import {
  enqueueLine,
  ensureGroup,
  groupKeyOf,
  lineStates,
  type GroupSettings,
  type LineState,
} from './ledger.js';

/**
 * Model calls sent in provider batch jobs. A call is answered from the ledger when it was answered
 * before; otherwise it is queued under its cache key (the job line's custom id) and waits, polling
 * the ledger, until a job answered it or the rule sends it online (`maxSubmissions` jobs left it
 * unanswered). Whoever waits also drives the jobs (dispatcher.ts), so the machinery runs exactly
 * while some process needs an answer, and a retried activity finds its request where it left it.
 */

/** Dispatcher passes that failed in a row before the waiting calls fail with the last error. */
const MAX_FAILED_PASSES = 10;

interface Waiter {
  readonly pollMs: number;
  readonly resolve: (state: LineState) => void;
  readonly reject: (error: unknown) => void;
}

/** The calls of one process waiting on one database, and the loop that serves them. */
class Waiting {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private running = false;
  private sleepingMs = Infinity;
  private wake: (() => void) | undefined;

  constructor(private readonly pool: pg.Pool) {}

  wait(key: string, pollSeconds: number, signal: AbortSignal | undefined): Promise<LineState> {
    return new Promise<LineState>((resolve, reject) => {
      signal?.throwIfAborted();
      const forKey = this.waiters.get(key) ?? new Set<Waiter>();
      const waiter: Waiter = {
        pollMs: pollSeconds * 1000,
        resolve: (state) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(state);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      const onAbort = () => {
        forKey.delete(waiter);
        if (forKey.size === 0) this.waiters.delete(key);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      forKey.add(waiter);
      this.waiters.set(key, forKey);
      if (!this.running) void this.loop();
      else if (waiter.pollMs < this.sleepingMs) this.wake?.();
    });
  }

  /** Sleeps the poll interval; a waiter that polls more often cuts the sleep short. */
  private sleep(ms: number): Promise<void> {
    this.sleepingMs = ms;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        this.sleepingMs = Infinity;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private pollMs(): number {
    let least = Infinity;
    for (const set of this.waiters.values()) for (const w of set) least = Math.min(least, w.pollMs);
    return least;
  }

  private async loop(): Promise<void> {
    this.running = true;
    let failedPasses = 0;
    try {
      while (this.waiters.size > 0) {
        await this.sleep(this.pollMs());
        try {
          await dispatchOnce(this.pool);
          this.settle(await lineStates(this.pool, [...this.waiters.keys()]));
          failedPasses = 0;
        } catch (error) {
          // A provider or database outage is waited out; one that lasts fails the calls, and their
          // activities' retries come back to the same queued requests.
          if (++failedPasses >= MAX_FAILED_PASSES) this.failAll(error);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private settle(states: ReadonlyMap<string, LineState>): void {
    for (const [key, state] of states) {
      if (state !== 'answered' && state !== 'online') continue;
      for (const waiter of this.waiters.get(key) ?? []) waiter.resolve(state);
      this.waiters.delete(key);
    }
  }

  private failAll(error: unknown): void {
    for (const set of this.waiters.values()) for (const waiter of set) waiter.reject(error);
    this.waiters.clear();
  }
}

const waitingByPool = new WeakMap<pg.Pool, Waiting>();
const knownGroups = new WeakMap<pg.Pool, Set<string>>();

function waitingOn(pool: pg.Pool): Waiting {
  let waiting = waitingByPool.get(pool);
  if (!waiting) waitingByPool.set(pool, (waiting = new Waiting(pool)));
  return waiting;
}

/** Completes calls that carry a batch window through batch jobs; the rest through `online`. */
export function createBatchCompleter(databaseUrl: string, online: CallCompleter): CallCompleter {
  return async (call, responseFormat) => {
    const window = call.batch;
    if (!window) return online(call, responseFormat);
    const pool = getPool(databaseUrl);
    const identity = identifyCall(call, responseFormat);
    const key = cacheKey(identity);
    const found = await findCall(pool, key);
    if (found) return resultOfStored(found, true);
    const groupKey = await ensureGroupOnce(pool, {
      endpoint: call.endpoint,
      role: call.role ?? null,
      window,
    });
    let state = await enqueueLine(pool, groupKey, {
      cacheKey: key,
      identity,
      ...(call.runId !== undefined ? { runId: call.runId } : {}),
      ...(call.role !== undefined ? { role: call.role } : {}),
      body: chatRequestBody(call, responseFormat),
    });
    if (state !== 'online' && state !== 'answered')
      state = await waitingOn(pool).wait(key, window.pollSeconds, call.signal);
    if (state === 'online') return online(call, responseFormat);
    const answered = await findCall(pool, key);
    if (!answered) throw new Error(`batch line ${key} is marked answered but llm_calls has no row for it`);
    return resultOfStored(answered, false);
  };
}

/** The group's key, recorded once per process. */
async function ensureGroupOnce(pool: pg.Pool, settings: GroupSettings): Promise<string> {
  let known = knownGroups.get(pool);
  if (!known) knownGroups.set(pool, (known = new Set()));
  const key = groupKeyOf(settings);
  if (!known.has(key)) {
    await ensureGroup(pool, settings);
    known.add(key);
  }
  return key;
}
