import { inspect } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConnectionError, retryOnConnectionError } from '../../activities/store/db.js';
import { DatabaseUnreachableError } from '../../activities/store/errors.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { freePort } from '../../testkit/ports.js';

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('isConnectionError', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db.drop());

  it('is true for what pg throws when PostgreSQL is not there', async () => {
    const port = await freePort();
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/x` });
    const error = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeDefined();
    expect(isConnectionError(error)).toBe(true);
  });

  it('is true for a server shutting down or a dropped connection, false for a refused statement', async () => {
    expect(isConnectionError(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBe(
      true,
    );
    expect(isConnectionError(Object.assign(new Error('x'), { code: '08006' }))).toBe(true);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const syntax = await client.query('SELEC 1').then(
      () => undefined,
      (e: unknown) => e,
    );
    const unique = await client
      .query('CREATE TEMP TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1), (1)')
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    await client.end();
    expect(isConnectionError(syntax)).toBe(false);
    expect(isConnectionError(unique)).toBe(false);
    expect(isConnectionError(undefined)).toBe(false);
  });
});

describe('retryOnConnectionError', () => {
  it('runs the write again until PostgreSQL is back', async () => {
    let calls = 0;
    const value = await retryOnConnectionError(async () => {
      calls++;
      if (calls < 3) throw refused();
      return 'stored';
    });
    expect(value).toBe('stored');
    expect(calls).toBe(3);
  });

  it('throws any other error at once', async () => {
    let calls = 0;
    const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
    await expect(
      retryOnConnectionError(async () => {
        calls++;
        throw unique;
      }),
    ).rejects.toBe(unique);
    expect(calls).toBe(1);
  });

  it('gives up with the connection error once its time is spent, or when aborted', async () => {
    let calls = 0;
    await expect(
      retryOnConnectionError(
        async () => {
          calls++;
          throw refused();
        },
        undefined,
        600,
      ),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(calls).toBeGreaterThanOrEqual(2);

    const aborted = new AbortController();
    aborted.abort();
    let abortedCalls = 0;
    await expect(
      retryOnConnectionError(async () => {
        abortedCalls++;
        throw refused();
      }, aborted.signal),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(abortedCalls).toBe(1);
  });
});

describe('DatabaseUnreachableError', () => {
  it('keeps no password in its message, its fields or its inspected form', () => {
    const error = new DatabaseUnreachableError(
      'postgres://app:s3cr3t@db.internal:5432/mw',
      new Error('ECONNREFUSED'),
    );
    expect(error.url).toBe('postgres://app:***@db.internal:5432/mw');
    for (const shown of [error.message, JSON.stringify(error), inspect(error), String(error.stack)])
      expect(shown).not.toContain('s3cr3t');
  });
});
