import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationMetrics } from '../../schemas/evaluation-contract.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';

/** `mockworld report <id>` of an Evaluation run: the metric tables from the stored summary, or the
 * trials stored so far while it has none. Reads PostgreSQL only (no Temporal). */
describe('mockworld report of an Evaluation run', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.drop());

  const metrics: EvaluationMetrics = {
    evaluationId: 'eval-a',
    confidence: 0.95,
    bootstrapSamples: 200,
    trials: 10,
    groups: [
      {
        benchmark: 'tau2',
        group: 'airline',
        tasks: 2,
        trials: 8,
        k: 4,
        equalTrials: true,
        avgAtK: 0.625,
        avgAtKCi: [0.25, 1],
        passHatK: { '1': 0.625, '2': 0.4167, '3': 0.25, '4': 0 },
        passHatKCi: { '1': [0.25, 1], '2': [0, 1], '3': [0, 0.5], '4': [0, 0] },
        terminations: { user_stop: 7, max_steps: 1 },
        modelErrors: 0,
        promptTokens: 1200,
        completionTokens: 300,
        configHashes: 1,
      },
      {
        benchmark: 'bfcl',
        group: 'multi_turn_base',
        tasks: 2,
        trials: 2,
        k: 1,
        equalTrials: true,
        avgAtK: 0.5,
        avgAtKCi: [0, 1],
        passHatK: { '1': 0.5 },
        passHatKCi: { '1': [0, 1] },
        terminations: { completed: 2 },
        modelErrors: 1,
        promptTokens: 50,
        completionTokens: 5,
        configHashes: 1,
      },
    ],
    bfclOverall: {
      categories: ['multi_turn_base'],
      complete: false,
      missing: ['multi_turn_miss_func', 'multi_turn_miss_param', 'multi_turn_long_context'],
      accuracy: null,
      ci: null,
    },
    comparison: {
      against: 'eval-b',
      groups: [
        { benchmark: 'tau2', group: 'airline', tasks: 2, difference: 0.25, ci: [0, 0.5], pValue: 0.5 },
      ],
    },
  };

  it('prints the metric tables of a finished run', async () => {
    await query(
      db.url,
      `INSERT INTO runs (run_id, kind, spec, status, summary) VALUES ($1, 'Evaluation', '{}', 'completed', $2)`,
      ['eval-a', JSON.stringify({ name: 'x', metrics })],
    );
    const { code, stdout } = await runCli({ DATABASE_URL: db.url }, 'report', 'eval-a');
    expect(code).toBe(0);
    const airline = stdout.split('\n').find((line) => line.startsWith('tau2'))!;
    expect(airline.split(/\s{2,}/)).toEqual([
      'tau2',
      'airline',
      '2',
      '4',
      '0.625',
      '[0.250, 1.000]',
      '0.625',
      '0.417',
      '0.250',
      '0.000',
      '0',
      '1200/300',
    ]);
    expect(stdout).toContain('pass^4');
    expect(stdout).toContain(
      'BFCL-V4 multi-turn overall: N/A (multi_turn_miss_func, multi_turn_miss_param, multi_turn_long_context ' +
        'not evaluated; the overall is the mean of all four categories)',
    );
    expect(stdout).toContain('paired difference to eval-b');
    expect(stdout).toMatch(/tau2\s+airline\s+2\s+0\.250\s+\[0\.000, 0\.500\]\s+0\.50/);
  });

  it('shows the trials stored so far of a run without metrics', async () => {
    await query(
      db.url,
      `INSERT INTO runs (run_id, kind, spec, status) VALUES ('eval-running', 'Evaluation', '{}', 'running')`,
    );
    for (const [task, reward] of [
      ['t1', 1],
      ['t2', 0],
    ] as const) {
      await query(
        db.url,
        `INSERT INTO eval_trials (evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps,
           prompt_tokens, completion_tokens, trajectory, package_versions, data_version, config, config_hash,
           wall_seconds, cpu_seconds)
         VALUES ('eval-running', 'tau2', 'retail', $1, 0, $2, 'user_stop', 3, 1, 1, '{}', '{}', '{}', '{}', 'h', 1, 1)`,
        [task, reward],
      );
    }
    const { code, stdout } = await runCli({ DATABASE_URL: db.url }, 'report', 'eval-running');
    expect(code).toBe(0);
    expect(stdout).toContain('no metrics yet');
    expect(stdout).toMatch(/tau2\s+retail\s+2\s+0\.500\s+0/);
  });
});
