import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPool } from '../../activities/store/db';
import { DatasetImportError, importTasks } from '../../activities/synthesis/import';
import { planIteration } from '../../activities/training/plan';
import { REPO_ROOT } from '../../deploy/paths';
import { createTestDatabase, query, type TestDatabase } from '../support/database';

const EXAMPLE = path.join(REPO_ROOT, 'examples', 'grpo', 'tasks.jsonl');

describe('importing an exported tasks.jsonl as a training dataset', () => {
  let db: TestDatabase;
  let example: string;
  const tasksOf = (id: string) =>
    query<{
      task_id: string;
      idx: number;
      stage: string;
      instruction: string;
      tools: { function: { name: string } }[];
    }>(db.url, 'SELECT task_id, idx, stage, instruction, tools FROM tasks WHERE run_id = $1 ORDER BY idx', [
      id,
    ]);
  const refusal = (id: string, text: string) =>
    importTasks(getPool(db.url), id, 'bad.jsonl', text).then(
      () => new Error('expected a refusal'),
      (e: unknown) => e,
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    example = await readFile(EXAMPLE, 'utf8');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('stores the shipped example as kept tasks a GRPO iteration can be planned on', async () => {
    expect(await importTasks(getPool(db.url), 'dataset-example', EXAMPLE, example)).toEqual({
      datasetId: 'dataset-example',
      tasks: 4,
    });
    const rows = await tasksOf('dataset-example');
    expect(rows.map((r) => [r.task_id, r.idx, r.stage])).toEqual(
      [0, 1, 2, 3].map((i) => [`dataset-example-task-0000${i}`, i, 'kept']),
    );
    expect(rows[0]!.instruction).toBe('Please refill my usual blood-pressure prescription.');
    // The mock world adds ask_user itself: the stored tools are the task's own.
    expect(rows.every((r) => r.tools.every((t) => t.function.name !== 'ask_user'))).toBe(true);
    const plan = await planIteration(getPool(db.url), {
      runId: 'grpo-on-import',
      synthesisRunId: 'dataset-example',
      heldOutTasks: 1,
      globalBatch: 2,
      seed: 0,
      iteration: 0,
    });
    expect(plan).toMatchObject({
      trainSize: 3,
      heldOutTaskIds: [expect.stringMatching(/^dataset-example-task/)],
    });
  });

  it('refuses an id that already holds tasks, changing nothing', async () => {
    const error = await refusal('dataset-example', example);
    expect(error).toBeInstanceOf(DatasetImportError);
    expect(String(error)).toContain('dataset-example already holds 4 tasks');
    expect(await tasksOf('dataset-example')).toHaveLength(4);
  });

  it('names every bad line and writes nothing', async () => {
    const [good, second] = example.split('\n');
    const withoutRubric = JSON.parse(second!);
    delete withoutRubric.rubric;
    const badTool = JSON.parse(good!);
    badTool.tools[0].function.name = 'has spaces';
    const error = await refusal(
      'dataset-bad',
      [good, '{not json', JSON.stringify(withoutRubric), JSON.stringify(badTool), '', '[]'].join('\n'),
    );
    expect(error).toBeInstanceOf(DatasetImportError);
    const message = String(error);
    expect(message).toMatch(/line 2: not JSON/);
    expect(message).toMatch(/line 3: rubric/);
    expect(message).toMatch(/line 4: tools\[0\]\.function\.name/);
    expect(message).toMatch(/line 6: \(line\)/);
    expect(message).not.toMatch(/line [15]:/);
    expect(await tasksOf('dataset-bad')).toHaveLength(0);
    expect(String(await refusal('dataset-empty', '\n\n'))).toContain('the file holds none');
  });
});
