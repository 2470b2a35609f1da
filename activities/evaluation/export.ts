/**
 * Every trial of an Evaluation run as JSON Lines (`mockworld export <evaluation id>`): the stored
 * row whole, its trajectory as the benchmark recorded it included, in (benchmark, group, task,
 * trial) order. Read in pages, so a run of thousands of long trajectories never sits in memory.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import type pg from 'pg';

const PAGE = 200;

/** Writes `<directory>/trials.jsonl`; returns its path and the number of trials written. */
export async function exportEvaluationTrials(
  pool: pg.Pool,
  evaluationId: string,
  directory: string,
): Promise<{ file: string; trials: number }> {
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, 'trials.jsonl');
  const out = createWriteStream(file, { encoding: 'utf8' });
  let after: [string, string, string, number] = ['', '', '', -1];
  let trials = 0;
  for (;;) {
    const { rows } = await pool.query<Record<string, unknown>>(
      `SELECT evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps, prompt_tokens,
              completion_tokens, failure, detail, trajectory, package_versions, data_version, config, config_hash,
              wall_seconds, cpu_seconds, created_at
         FROM eval_trials
        WHERE evaluation_id = $1 AND (benchmark, task_group, task_id, trial) > ($2, $3, $4, $5)
        ORDER BY benchmark, task_group, task_id, trial
        LIMIT ${PAGE}`,
      [evaluationId, ...after],
    );
    for (const row of rows) {
      if (!out.write(`${JSON.stringify(row)}\n`))
        await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    trials += rows.length;
    if (rows.length < PAGE) break;
    const last = rows[rows.length - 1]!;
    after = [String(last.benchmark), String(last.task_group), String(last.task_id), Number(last.trial)];
  }
  out.end();
  await finished(out);
  return { file, trials };
}
