import type pg from 'pg';
import type { Cell } from './grid.js';

/** A cell as recorded: finished cells carry their result, so no one trains them again. */
export type RecordedCell =
  | { readonly finished: false }
  | {
      readonly finished: true;
      readonly result: { cellId: string; score: number | null; examples: number; steps: number };
    };

/** Registers a cell (insert-if-absent) and says whether it was already trained and evaluated. */
export async function startCell(pool: pg.Pool, studyId: string, cell: Cell): Promise<RecordedCell> {
  await pool.query(
    `INSERT INTO study_cells (study_id, cell_id, protocol, pool, budget, seed)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    [studyId, cell.cellId, cell.protocol, cell.pool, cell.budget, cell.seed],
  );
  const { rows } = await pool.query<{
    score: number | null;
    examples: number;
    steps: number;
    finished: boolean;
  }>(
    `SELECT score, examples, steps, finished_at IS NOT NULL AS finished FROM study_cells
      WHERE study_id = $1 AND cell_id = $2`,
    [studyId, cell.cellId],
  );
  const row = rows[0]!;
  if (!row.finished) return { finished: false };
  return {
    finished: true,
    result: { cellId: cell.cellId, score: row.score, examples: row.examples, steps: row.steps },
  };
}

/** Records the end of a cell's training (the last step's trainer metrics). Idempotent. */
export async function recordCellTrained(
  pool: pg.Pool,
  input: { studyId: string; cellId: string; steps: number; metrics: Record<string, unknown> },
): Promise<void> {
  await pool.query(
    `UPDATE study_cells SET train_metrics = $3, trained_at = COALESCE(trained_at, now())
      WHERE study_id = $1 AND cell_id = $2`,
    [input.studyId, input.cellId, JSON.stringify({ steps: input.steps, ...input.metrics })],
  );
}

/** Ids of the study's cells that are trained and evaluated. */
export async function finishedCells(pool: pg.Pool, studyId: string): Promise<string[]> {
  const { rows } = await pool.query<{ cell_id: string }>(
    'SELECT cell_id FROM study_cells WHERE study_id = $1 AND finished_at IS NOT NULL ORDER BY cell_id',
    [studyId],
  );
  return rows.map((r) => r.cell_id);
}
