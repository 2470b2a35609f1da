import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPool } from '../../activities/store/db.js';
import { DatasetImportError, importTasks } from '../../activities/synthesis/import.js';
import { planIteration } from '../../activities/training/plan.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';

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

  it('refuses an id already taken by a dataset or a run, changing nothing; a run cannot take a dataset id', async () => {
    const error = await refusal('dataset-example', example);
    expect(error).toBeInstanceOf(DatasetImportError);
    expect(String(error)).toContain('dataset-example is already the id of a run or a dataset');
    expect(await tasksOf('dataset-example')).toHaveLength(4);
    await query(db.url, `INSERT INTO runs (run_id, kind, spec) VALUES ('synthesis-x', 'Synthesis', '{}')`);
    expect(await refusal('synthesis-x', example)).toBeInstanceOf(DatasetImportError);
    expect(await tasksOf('synthesis-x')).toHaveLength(0);
    // The runs row keeps the id: recordRunStart refuses a run of another kind under it.
    const [row] = await query<{ kind: string; summary: unknown }>(
      db.url,
      `SELECT kind, summary FROM runs WHERE run_id = 'dataset-example'`,
    );
    expect(row).toEqual({ kind: 'Dataset', summary: { tasks: 4, importedFrom: 'tasks.jsonl' } });
  });

  it('names every bad line and writes nothing', async () => {
    const [good, second] = example.split('\n');
    const withoutRubric = JSON.parse(second!);
    delete withoutRubric.rubric;
    const badTool = JSON.parse(good!);
    badTool.tools.unshift(badTool.tools.pop()); // ask_user first: tools are named by their place in the line
    badTool.tools[1].function.name = 'has spaces';
    const unusable = JSON.parse(good!);
    unusable.hidden_context = ' ';
    unusable.rubric = { forbidden: [], subGoals: [], requiredInteractions: [] };
    const error = await refusal(
      'dataset-bad',
      [
        '\uFEFF' + good,
        '{not json',
        JSON.stringify(withoutRubric),
        JSON.stringify(badTool),
        '',
        '[]',
        JSON.stringify(unusable),
      ].join('\n'),
    );
    expect(error).toBeInstanceOf(DatasetImportError);
    const message = String(error);
    expect(message).toMatch(/line 2: not JSON/);
    expect(message).toMatch(/line 3: rubric/);
    expect(message).toMatch(/line 4: tools\[1\]\.function\.name/);
    expect(message).toMatch(/line 6: \(line\)/);
    expect(message).toMatch(/line 7: hidden_context/);
    expect(message).toMatch(/line 7: rubric: needs a sub-goal or a required interaction/);
    expect(message).not.toMatch(/line [15]:/);
    expect(await tasksOf('dataset-bad')).toHaveLength(0);
    expect(String(await refusal('dataset-empty', '\n\n'))).toContain('the file holds none');
  });
});
