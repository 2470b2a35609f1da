/**
 * Errors of the PostgreSQL store. Each declares its Temporal failure `type` (its `name`) and
 * whether a retry can help (activities/error-class.ts), so the retry policies list the
 * non-retryable ones from {@link STORE_ERRORS}. Pure: workflow code imports this module.
 */
import { nonRetryableTypes, type ErrorClass } from '../error-class.js';

/** Hides a password in a connection string before it reaches a log or an error. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

/** Raised when PostgreSQL cannot be reached; says where and what to do. Retryable: it may come back. */
export class DatabaseUnreachableError extends Error {
  static readonly type = 'DatabaseUnreachableError';
  static readonly retryable = true;
  override readonly name = DatabaseUnreachableError.type;
  /** The URL tried, its password replaced by `***`: an error's fields reach logs and crash dumps. */
  readonly url: string;
  constructor(url: string, cause: unknown) {
    super(
      `PostgreSQL is not reachable at ${redactUrl(url)} (${(cause as Error)?.message ?? cause}). ` +
        'Start it (on Debian: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) ' +
        'or point DATABASE_URL at a running server.',
    );
    this.url = redactUrl(url);
  }
}

/**
 * Raised when a database name (in DATABASE_URL, or one to drop) is not a plain identifier: it is
 * spliced into CREATE/DROP DATABASE, which take no parameters. Not retryable: the URL must change.
 */
export class DatabaseNameError extends Error {
  static readonly type = 'DatabaseNameError';
  static readonly retryable = false;
  override readonly name = DatabaseNameError.type;
  constructor(
    /** The refused name, as decoded from the URL. */
    readonly databaseName: string,
  ) {
    super(
      `Unsupported database name: "${databaseName}" (letters, digits, _ and -, not starting with a digit)`,
    );
  }
}

/**
 * Raised when a row an insert just conflicted with (or just wrote) cannot be read back: it was
 * deleted in between (an operator's cleanup, a dropped database). Retryable: the next attempt
 * writes it again.
 */
export class RowVanishedError extends Error {
  static readonly type = 'RowVanishedError';
  static readonly retryable = true;
  override readonly name = RowVanishedError.type;
  constructor(
    /** The table. */
    readonly table: string,
    /** The row's key, as shown, e.g. `task-1/search/{"q":"x"}`. */
    readonly key: string,
  ) {
    super(`${table} row ${key} vanished after it was written or conflicted on`);
  }
}

/** Every error of the store, for the retry policies and the retry-table test. */
export const STORE_ERRORS = [
  DatabaseUnreachableError,
  DatabaseNameError,
  RowVanishedError,
] as const satisfies readonly ErrorClass[];

/** Types of {@link STORE_ERRORS} a retry cannot fix. */
export const STORE_NON_RETRYABLE_ERRORS = nonRetryableTypes(STORE_ERRORS);
