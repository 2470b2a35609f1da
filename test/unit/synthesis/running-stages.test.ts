/**
 * A Synthesis run counts its running tasks as `started` (it hears back only their outcomes);
 * `mockworld status` places each in its stage from the task rows, in one query.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPool } from '../../../activities/store/db.js';
import { withRunningStages } from '../../../cli/task-status.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';

describe('the stages of a synthesis run’s running tasks', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('mw_running_stages');
    const rows: [string, number, string][] = [
      ['run-a', 0, 'pending'], // its toolset stage is running
      ['run-a', 1, 'refine'],
      ['run-a', 2, 'instruction'],
      ['run-a', 3, 'kept'],
      ['run-a', 4, 'demonstrations'],
      ['run-b', 0, 'refine'], // another run's task
    ];
    for (const [run, idx, stage] of rows)
      await query(
        db.url,
        `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage) VALUES ($1, $2, $3, 'p', $4)`,
        [`${run}-task-${idx}`, run, idx, stage],
      );
  });
  afterAll(async () => db.drop());

  it('puts each running task in the stage after the last its row finished; one without a row stays started', async () => {
    const counts = await withRunningStages(getPool(db.url), 'run-a', { pending: 3, started: 5, kept: 1 });
    expect(counts).toEqual({
      pending: 3,
      kept: 1,
      toolset: 1,
      instruction: 1,
      demonstrations: 1,
      rubric: 1,
      started: 1,
    });
  });

  it('leaves counts without running tasks as they are, and never places more than are running', async () => {
    expect(await withRunningStages(getPool(db.url), 'run-a', { kept: 4 })).toEqual({ kept: 4 });
    const two = await withRunningStages(getPool(db.url), 'run-a', { started: 2 });
    expect(Object.values(two).reduce((a, b) => a + b, 0)).toBe(2);
    expect(two).not.toHaveProperty('started');
  });
});
