import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { loadEnvironment } from '../../schemas/environment.js';
import { MATCHED_BUDGETS } from './analysis/budgets.js';
import { intrinsicMetrics } from './analysis/intrinsic.js';
import { renderStudyReport } from './analysis/report.js';
import { renderChartSvg } from '../charts/render.js';
import { sweepMeanGap } from './analysis/gap.js';
import { judgeCheck } from './judge-controls.js';
import {
  standingMarkdown,
  standingSummary,
  studyJudgeStanding,
  type JudgeStanding,
} from './judge-standing.js';
import type { MatchedBudgetSample, ProtocolCurve, StudyReportInput } from '../../schemas/study-report.js';

/** Budget whose pool the intrinsic metrics are measured on (seed 002 reports r = 8). */
const INTRINSIC_R = 8;

interface CellRow {
  cell_id: string;
  protocol: string;
  pool: number;
  budget: number;
  seed: number;
  score: number | null;
}

/** Where a study's report and plots are written. */
export function studyDirectory(studyId: string): string {
  return path.join(loadEnvironment().MOCKWORLD_HOME, 'studies', studyId);
}

/** The admitted texts of one cell's SFT set with their verdicts (what the intrinsic metrics read). */
async function poolOf(pool: pg.Pool, studyId: string, cellId: string) {
  const { rows } = await pool.query<{
    question_id: string;
    text: string;
    correct: boolean | null;
    kind: string;
  }>(
    `SELECT e.question_id, e.correct, e.kind,
            CASE e.kind WHEN 'repair-trace' THEN r.trace WHEN 'repair-revised' THEN r.revised ELSE a.response END AS text
       FROM study_cell_examples e
       JOIN study_attempts a ON a.study_id = e.study_id AND a.stream = e.stream
                            AND a.question_id = e.question_id AND a.attempt = e.attempt
       LEFT JOIN study_repairs r ON r.study_id = e.study_id AND r.question_id = e.question_id AND r.attempt = e.attempt
      WHERE e.study_id = $1 AND e.cell_id = $2 ORDER BY e.position`,
    [studyId, cellId],
  );
  return rows.map((r) => ({
    questionId: r.question_id,
    text: r.text,
    correct: r.correct,
    rewrite: r.kind === 'repair-trace',
  }));
}

/** The report's input, read from the evaluated cells of the study. */
export async function studyReportInput(pool: pg.Pool, studyId: string): Promise<StudyReportInput | null> {
  const { rows: cells } = await pool.query<CellRow>(
    `SELECT cell_id, protocol, pool, budget, seed, score FROM study_cells
      WHERE study_id = $1 AND score IS NOT NULL ORDER BY protocol, budget, seed`,
    [studyId],
  );
  if (cells.length === 0) return null;
  const curves: ProtocolCurve[] = [];
  for (const protocol of [...new Set(cells.map((c) => c.protocol))]) {
    const full = cells.filter((c) => c.protocol === protocol && c.pool === 4);
    if (full.length === 0) continue;
    const budgets = [...new Set(full.map((c) => c.budget))].sort((a, b) => a - b);
    const poolR = budgets.filter((r) => r <= INTRINSIC_R).at(-1) ?? budgets[0]!;
    const measured = full.find((c) => c.budget === poolR)!;
    const metrics = intrinsicMetrics(await poolOf(pool, studyId, measured.cell_id));
    curves.push({
      protocol,
      samples: full.map((c) => ({ r: c.budget, seed: c.seed, score: c.score! })),
      intrinsic: {
        jaccardDistance: metrics.diversity.value,
        correctnessNoise: metrics.noise.rate,
        rewriteShare: metrics.rewrite.share,
        poolR,
      },
    });
  }
  const matchedBudget: MatchedBudgetSample[] = cells
    .filter((c) => c.protocol === 'rs' && (MATCHED_BUDGETS as readonly number[]).includes(c.pool * c.budget))
    .map((c) => ({ q: c.pool as 1 | 2 | 4, r: c.budget, seed: c.seed, score: c.score! }));
  const pools = new Set(matchedBudget.map((m) => m.q));
  const { rows: runs } = await pool.query<{ samples: number | null }>(
    `SELECT (spec->'evaluation'->>'samples')::int AS samples FROM runs WHERE run_id = $1`,
    [studyId],
  );
  return {
    title: `Scaling study ${studyId}`,
    samplesPerQuestion: runs[0]?.samples ?? 8,
    curves,
    // The matched-budget comparison needs more than the full pool.
    matchedBudget: pools.size > 1 ? matchedBudget : undefined,
  };
}

/** Written files and a small summary for the run record. */
export interface WrittenStudyReport {
  readonly reportPath: string;
  readonly summary: {
    readonly evaluatedCells: number;
    readonly protocols: Record<string, { budgets: number[]; bestMeanPct: number | null }>;
    /** The judge's standing in one line, e.g. `UNRELIABLE: 1 of 2 controls passed (50%; threshold 90%)`. */
    readonly judge: string;
    /** The toy roles, `; `-separated; absent when no role is a toy. */
    readonly toyFigures?: string;
  };
  /** Whether the figures can be believed: the judge's controls and the toy roles. */
  readonly standing: JudgeStanding;
}

/** A report's markdown with the standing right under its title, where no reader misses it. */
function withStanding(markdown: string, standing: JudgeStanding): string {
  const [title, ...rest] = markdown.split('\n');
  return [title, standingMarkdown(standing), ...rest].join('\n');
}

/**
 * Fits every protocol's curve and writes `report.md` and one SVG per curve to the study's
 * directory (atomically: a reader never sees half a report). Reading only stored cells, it can be
 * re-run at any time, also while a study is still training.
 */
export async function writeStudyReport(pool: pg.Pool, studyId: string): Promise<WrittenStudyReport> {
  const dir = studyDirectory(studyId);
  await mkdir(dir, { recursive: true });
  const reportPath = path.join(dir, 'report.md');
  const input = await studyReportInput(pool, studyId);
  const judge = await studyJudgeStanding(pool, studyId);
  if (!input) {
    await writeAtomically(
      reportPath,
      withStanding(`# Scaling study ${studyId}\n\n${await noScoreReason(pool, studyId)}\n`, judge) +
        (await cellsSection(pool, studyId)),
    );
    return {
      reportPath,
      summary: { evaluatedCells: 0, protocols: {}, ...standingSummary(judge) },
      standing: judge,
    };
  }
  const report = renderStudyReport(input);
  for (const figure of report.figures)
    await writeAtomically(path.join(dir, figure.fileName), await renderChartSvg(figure.spec));
  await writeAtomically(
    reportPath,
    withStanding(report.markdown, judge) +
      questionSynthesisSection(input) +
      (await cellsSection(pool, studyId)),
  );
  const protocols: WrittenStudyReport['summary']['protocols'] = {};
  for (const analysis of report.analyses) {
    const best = Math.max(...analysis.budgets.map((b) => b.mean));
    protocols[analysis.protocol] = {
      budgets: analysis.budgets.map((b) => b.r),
      bestMeanPct: Number.isFinite(best) ? Math.round(best * 10_000) / 100 : null,
    };
  }
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM study_cells WHERE study_id = $1 AND score IS NOT NULL',
    [studyId],
  );
  const evaluatedCells = rows[0]!.n;
  return { reportPath, summary: { evaluatedCells, protocols, ...standingSummary(judge) }, standing: judge };
}

/**
 * Synthesized questions read against both of the seed's references (Sec. 6, Fig. 5): RS at the
 * same r (more SFT examples on the synthesized side) and RS at 4r (equal example counts).
 */
function questionSynthesisSection(input: StudyReportInput): string {
  const points = (protocol: string) =>
    input.curves.find((c) => c.protocol === protocol)?.samples.map((s) => ({ r: s.r, score: s.score })) ?? [];
  const synthesized = points('question-synthesis');
  const rs = points('rs');
  if (synthesized.length === 0 || rs.length === 0) return '';
  const lines = [
    '',
    '## Question synthesis against RS',
    '',
    '| reference | gap per k (pp) | sweep-mean gap (pp) |',
    '| --- | --- | ---: |',
  ];
  for (const [name, factor] of [
    ['fixed r (RS at r = k)', 1],
    ['matched budget (RS at r = 4k)', 4],
  ] as const) {
    const gap = sweepMeanGap(synthesized, rs, factor);
    lines.push(
      gap
        ? `| ${name} | ${gap.perBudget.map((g) => `k=${g.r}: ${g.gapPp.toFixed(2)}`).join(', ')} | ${gap.gapPp.toFixed(2)} |`
        : `| ${name} | no shared budget evaluated yet | |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Why no cell has a score: none evaluated yet, or the judge graded none of their samples. */
async function noScoreReason(pool: pg.Pool, studyId: string): Promise<string> {
  const { rows } = await pool.query<{ finished: number; failed: number }>(
    `SELECT (SELECT count(*)::int FROM study_cells WHERE study_id = $1 AND finished_at IS NOT NULL) AS finished,
            (SELECT count(*)::int FROM study_evaluations WHERE study_id = $1 AND correct IS NULL) AS failed`,
    [studyId],
  );
  const { finished, failed } = rows[0]!;
  if (finished === 0) return 'No cell has been evaluated yet.';
  return (
    `${finished} cell(s) evaluated, none with a score: the judge graded none of their samples ` +
    `(${failed} judge failures; its outputs are in llm_rejections, role study-judge). ` +
    'A judge that cannot answer CORRECT or INCORRECT needs a larger model (judge.endpoint).'
  );
}

/** Every cell with its data set, training and evaluation, judge failures included. */
async function cellsSection(pool: pg.Pool, studyId: string): Promise<string> {
  const { rows } = await pool.query<{
    cell_id: string;
    examples: number | null;
    questions: number | null;
    steps: number | null;
    loss: string | null;
    score: number | null;
    judged: number;
    failed: number;
  }>(
    `SELECT c.cell_id, c.examples, c.questions, c.steps, c.train_metrics->>'loss' AS loss, c.score,
            count(e.correct)::int AS judged, (count(e.sample) - count(e.correct))::int AS failed
       FROM study_cells c
       LEFT JOIN study_evaluations e ON e.study_id = c.study_id AND e.cell_id = c.cell_id
      WHERE c.study_id = $1 GROUP BY c.cell_id, c.examples, c.questions, c.steps, c.train_metrics, c.score
      ORDER BY c.cell_id`,
    [studyId],
  );
  const value = (v: unknown) => (v === null || v === undefined ? '—' : String(v));
  const lines = [
    '',
    '## Cells',
    '',
    'mean@k is over the judged samples; samples the judge could not grade (recorded in llm_rejections) are',
    'counted apart, never scored. "by checker / judge": verdicts the deterministic checker and the LLM judge',
    'decided; "controls": the judge\'s control answers passed on the questions it was asked about.',
    '',
    '| cell | examples | questions | steps | last loss | mean@k (%) | judged | judge failures | by checker / judge | controls |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const check = await judgeCheck(pool, studyId, r.cell_id);
    lines.push(
      `| ${r.cell_id} | ${value(r.examples)} | ${value(r.questions)} | ${value(r.steps)} | ${
        r.loss === null ? '—' : Number(r.loss).toFixed(3)
      } | ${r.score === null ? '—' : (100 * r.score).toFixed(2)} | ${r.judged} | ${r.failed} | ${
        check.decidedBy.checker
      } / ${check.decidedBy.judge} | ${check.controls === 0 ? '—' : `${check.controlsPassed}/${check.controls}`} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text, 'utf8');
  await rename(temporary, file);
}
