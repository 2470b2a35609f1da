import { afterEach, describe, expect, it } from 'vitest';
import { MockworldPlugin } from '../../workers/plugin.js';

describe('the database a plugin writes into', () => {
  const saved = process.env.DATABASE_URL;
  afterEach(() => {
    if (saved === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved;
  });

  it('is never a default nobody named: no databaseUrl, no DATABASE_URL is an error that says what to set', () => {
    delete process.env.DATABASE_URL;
    expect(() => new MockworldPlugin()).toThrow(/set DATABASE_URL .* or pass \{ databaseUrl \}/);
    process.env.DATABASE_URL = ''; // an empty variable is an unset one
    expect(() => new MockworldPlugin()).toThrow(/localDatabase: true/);
  });

  it('is DATABASE_URL, an explicit databaseUrl, or the local default when asked for', () => {
    delete process.env.DATABASE_URL;
    expect(() => new MockworldPlugin({ localDatabase: true })).not.toThrow();
    expect(() => new MockworldPlugin({ databaseUrl: 'postgres://127.0.0.1:1/x' })).not.toThrow();
    process.env.DATABASE_URL = 'postgres://127.0.0.1:1/y';
    expect(() => new MockworldPlugin()).not.toThrow();
  });
});
