import type pg from 'pg';
import { analyzeStudy, type ProtocolAnalysis } from '../../activities/study/analysis/report.js';
import { studyReportInput } from '../../activities/study/report.js';
import { StudyReportInputSchema } from '../../schemas/study-report.js';

/** One cell of a study's grid. */
export interface CellRow {
  readonly cellId: string;
  readonly protocol: string;
  readonly pool: number;
  readonly budget: number;
  readonly seed: number;
  readonly examples: number | null;
  readonly score: number | null;
  readonly trainedAt: Date | null;
  readonly finishedAt: Date | null;
}

/** Every cell of a study. */
export async function studyCells(pool: pg.Pool, studyId: string): Promise<CellRow[]> {
  const { rows } = await pool.query<{
    cell_id: string;
    protocol: string;
    pool: number;
    budget: number;
    seed: number;
    examples: number | null;
    score: number | null;
    trained_at: Date | null;
    finished_at: Date | null;
  }>(
    `SELECT cell_id, protocol, pool, budget, seed, examples, score, trained_at, finished_at FROM study_cells
      WHERE study_id = $1 ORDER BY protocol, pool DESC, budget, seed`,
    [studyId],
  );
  return rows.map((r) => ({
    cellId: r.cell_id,
    protocol: r.protocol,
    pool: r.pool,
    budget: r.budget,
    seed: r.seed,
    examples: r.examples,
    score: r.score,
    trainedAt: r.trained_at,
    finishedAt: r.finished_at,
  }));
}

/**
 * The fits and forecasts the study report shows, computed the same way from the stored cells
 * (so the viewer also shows a study that is still training).
 */
export async function studyAnalyses(
  pool: pg.Pool,
  studyId: string,
): Promise<{ analyses: ProtocolAnalysis[]; samplesPerQuestion: number | undefined }> {
  const input = await studyReportInput(pool, studyId);
  return input
    ? {
        analyses: analyzeStudy(StudyReportInputSchema.parse(input)),
        samplesPerQuestion: input.samplesPerQuestion,
      }
    : { analyses: [], samplesPerQuestion: undefined };
}
