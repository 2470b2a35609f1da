import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { ReasoningSolution } from '../../schemas/reasoning-synthesis.js';

/** The reasoning part of a run's summary. */
export interface ReasoningReport {
  readonly problems: number;
  readonly kept: number;
  readonly rejected: number;
  readonly rejectedByReason: Record<string, number>;
  readonly seedLinesRefused: number;
}

/** Counts of a run's reasoning problems by outcome and drop reason; null when it has none. */
export async function reasoningReport(pool: pg.Pool, runId: string): Promise<ReasoningReport | null> {
  const { rows } = await pool.query<{ outcome: string; drop_reason: string | null; n: number }>(
    `SELECT outcome, drop_reason, count(*)::int AS n FROM reasoning_problems
      WHERE run_id = $1 GROUP BY outcome, drop_reason`,
    [runId],
  );
  if (rows.length === 0) return null;
  const refused = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM reasoning_seed_rejections WHERE run_id = $1`,
    [runId],
  );
  const rejectedByReason: Record<string, number> = {};
  let kept = 0;
  let rejected = 0;
  for (const row of rows) {
    if (row.outcome === 'kept') kept += row.n;
    if (row.outcome === 'rejected') {
      rejected += row.n;
      rejectedByReason[row.drop_reason!] = (rejectedByReason[row.drop_reason!] ?? 0) + row.n;
    }
  }
  return {
    problems: rows.reduce((sum, row) => sum + row.n, 0),
    kept,
    rejected,
    rejectedByReason,
    seedLinesRefused: refused.rows[0]!.n,
  };
}

/** File name of the kept reasoning problems in a run's dataset directory. */
export const REASONING_FILE = 'reasoning.jsonl';

/**
 * Writes the run's kept reasoning problems, in index order, to `reasoning.jsonl` in `directory`
 * (written whole, then renamed into place): the scenario as the question, the agreed answer, the
 * persona, the seed it came from and the teacher's solutions. Returns the file and its rows.
 */
export async function exportReasoningProblems(
  pool: pg.Pool,
  runId: string,
  directory: string,
): Promise<{ file: string; rows: number }> {
  const { rows } = await pool.query<{
    problem_id: string;
    kind: string;
    persona_id: string;
    scenario: string;
    answer: string;
    source_question: string;
    source_answer: string | null;
    solutions: ReasoningSolution[];
  }>(
    `SELECT problem_id, kind, persona_id, scenario, answer, source_question, source_answer, solutions
       FROM reasoning_problems WHERE run_id = $1 AND outcome = 'kept' ORDER BY idx`,
    [runId],
  );
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, REASONING_FILE);
  const text = rows
    .map((row) =>
      JSON.stringify({
        id: row.problem_id,
        kind: row.kind,
        persona_id: row.persona_id,
        question: row.scenario,
        answer: row.answer,
        source: { question: row.source_question, answer: row.source_answer },
        solutions: row.solutions,
      }),
    )
    .join('\n');
  await writeFile(`${file}.partial`, rows.length > 0 ? `${text}\n` : '');
  await rename(`${file}.partial`, file);
  return { file, rows: rows.length };
}
