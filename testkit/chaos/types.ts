/**
 * What the chaos harness's parts share: the fault kinds, the record of one injected fault, and the
 * context an injector works in (harness.ts builds it; the injectors of the newer kinds live in
 * modules of their own and get only this).
 */
import type { TemporalObserver } from './observe.js';

/**
 * The injected faults, (a)–(d) and (f)–(j); (e), random model faults, run all along. New kinds go
 * last: a kind's fault schedule is seeded from its place here.
 */
export const FAULT_KINDS = [
  'cpu-worker-kill',
  'trainer-kill',
  'temporal-restart',
  'postgres-restart',
  'gateway-kill',
  'slow-model',
  'checkpoint-disk-full',
  'evaluation-worker-kill',
  'trainer-rank-kill',
] as const;
export type ChaosFaultKind = (typeof FAULT_KINDS)[number];

/** One injected fault and what followed. */
export interface FaultRecord {
  readonly kind: ChaosFaultKind;
  /** 1-based number among the faults of its kind. */
  readonly seq: number;
  /** Seconds since the harness started the runs. */
  readonly atS: number;
  readonly detail: string;
  /** Runs of the workload in progress when it landed. */
  readonly runsInProgress: number;
  /**
   * From injection until the killed part serves again (worker polling, server answering, database
   * accepting), or until the fault was lifted (slow model: normal latency; full disk: space freed).
   */
  backMs?: number;
  /**
   * Work the fault cut off: (a), (b), (i) activities running on the killed process (for (i):
   * trials); (f) model calls in flight in the gateway; (g) model requests a client gave up on
   * during the slow window (must be none: the endpoints' timeout outlasts the latency); (h)
   * attempts of the running trainer step that failed for want of space; (j) activities running on
   * the trainer group whose rank was killed.
   */
  interrupted?: number;
  /**
   * From injection until the work resumed; undefined: not recovered. (a), (b): every activity the
   * killed process was running started again on a live worker (or finished), and a worker serves
   * the queue; (c): a run records finished work on the restarted server; (d): the pipeline writes
   * to PostgreSQL again; (f): a model answer is recorded through the restarted gateway; (g): the
   * slowed server answers a request that arrived after the window at normal speed; (h): the
   * trainer step the full disk failed runs again once the space is freed; (i): every trial the
   * killed evaluation worker was running started again on a live worker (or finished), and the
   * restarted worker polls; (j): torchrun restarted the group, its new rank 0 polls, and every
   * activity the group was running (a trainer step) has run again and finished.
   */
  recoveryMs?: number;
  /** Slow model: from the window's start to its end, in ms (the latency stayed high this long). */
  windowMs?: number;
  readonly notes: string[];
}

/** What an injector works with. */
export interface FaultContext {
  readonly observer: TemporalObserver;
  readonly log: (line: string) => void;
  /** Seconds since the runs started, to one decimal. */
  readonly seconds: (at: number) => number;
  readonly runsInProgress: () => number;
  /** Records an injected fault (the report reads them). */
  readonly record: (fault: FaultRecord) => void;
  /** Watches a recovery in the background; the audit waits for every watch. */
  readonly monitor: (watch: Promise<void>) => void;
  /** The deadline of a recovery watch of a fault injected at `at`. */
  readonly watchUntil: (at: number) => () => number;
  readonly stopping: () => boolean;
}

/** An injector: 'later' when it cannot act now (asked again 5 s later). */
export type Injector = (seq: number, random: () => number) => Promise<'done' | 'later'>;
