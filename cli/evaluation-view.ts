import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { evaluationChartSpec } from '../activities/charts/evaluation-charts.js';
import { renderChartSvg } from '../activities/charts/render.js';
import { datasetDirectoryName } from '../activities/synthesis/export.js';
import { loadEnvironment } from '../schemas/environment.js';
import { EvaluationMetricsSchema, type EvaluationMetrics } from '../schemas/evaluation-contract.js';
import { renderTable } from './table.js';

/**
 * `mockworld report <id>` of an Evaluation run: per category/domain tasks, k, Avg@k with its
 * confidence interval and pass^1..pass^k (tau2's own estimator), BFCL's multi-turn overall (the
 * unweighted mean of the categories), and the paired difference to `compareWith` when the spec
 * named one. A run that has not finished shows what is stored so far.
 */
export async function renderEvaluationReport(
  pool: pg.Pool,
  runId: string,
  status: string,
  summary: Record<string, unknown> | null,
): Promise<{ text: string; json: Record<string, unknown> }> {
  const metrics = EvaluationMetricsSchema.safeParse(summary?.['metrics']);
  if (metrics.success) {
    // The figure is an extra: a report must not fail because MOCKWORLD_HOME is not writable.
    const chart = await writeScoresChart(runId, metrics.data).catch(
      (error: unknown) => `not written (${error instanceof Error ? error.message : error})`,
    );
    const text = `${renderMetrics(runId, status, metrics.data)}\n\nscores chart: ${chart}\nevery trial with its trajectory: mockworld export ${runId}`;
    return { text, json: { ...metrics.data, chart } };
  }
  const { rows } = await pool.query<{
    benchmark: string;
    group: string;
    trials: number;
    mean: number;
    errors: number;
  }>(
    `SELECT benchmark, task_group AS group, count(*)::int AS trials, avg(reward)::float AS mean,
            count(failure)::int AS errors
       FROM eval_trials WHERE evaluation_id = $1 GROUP BY benchmark, task_group ORDER BY benchmark, task_group`,
    [runId],
  );
  const text = [
    `Evaluation run ${runId}: ${status} (no metrics yet: trials stored so far)`,
    '',
    renderTable(
      rows.map((r) => ({
        benchmark: r.benchmark,
        group: r.group,
        trials: r.trials,
        'mean reward': fixed(r.mean),
        'model errors': r.errors,
      })),
    ),
  ].join('\n');
  return { text, json: { runId, status, stored: rows } };
}

const fixed = (value: number) => value.toFixed(3);
const interval = ([lo, hi]: readonly [number, number]) => `[${fixed(lo)}, ${fixed(hi)}]`;

function renderMetrics(runId: string, status: string, m: EvaluationMetrics): string {
  const pct = `${Math.round(m.confidence * 100)}% CI`;
  const maxK = Math.max(0, ...m.groups.map((g) => g.k));
  const groups = m.groups.map((g) => {
    const row: Record<string, unknown> = {
      benchmark: g.benchmark,
      group: g.group,
      tasks: g.tasks,
      k: g.equalTrials ? g.k : `${g.k} (unequal)`,
      'Avg@k': fixed(g.avgAtK),
      [pct]: interval(g.avgAtKCi),
    };
    for (let k = 1; k <= maxK; k++)
      row[`pass^${k}`] = g.passHatK[String(k)] === undefined ? '' : fixed(g.passHatK[String(k)]!);
    row['model errors'] = g.modelErrors;
    row['tokens (in/out)'] = `${g.promptTokens}/${g.completionTokens}`;
    return row;
  });
  const parts = [`Evaluation run ${runId}: ${status}, ${m.trials} trials`, '', renderTable(groups)];
  if (m.bfclOverall) {
    const o = m.bfclOverall;
    parts.push(
      '',
      !o.complete || o.accuracy === null || o.ci === null
        ? `BFCL-V4 multi-turn overall: N/A (${o.missing.join(', ') || 'a category'} not evaluated; ` +
            'the overall is the mean of all four categories)'
        : `BFCL-V4 multi-turn overall (unweighted mean of the four categories): ${fixed(o.accuracy)} ${pct} ${interval(o.ci)}`,
    );
  }
  const terminations = m.groups.map((g) => ({ benchmark: g.benchmark, group: g.group, ...g.terminations }));
  parts.push('', 'how trials ended', renderTable(terminations));
  if (m.comparison) {
    parts.push(
      '',
      `paired difference to ${m.comparison.against} (this run minus it, on the tasks both ran; p: two-sided paired sign-flip test)`,
      renderTable(
        m.comparison.groups.map((g) => ({
          benchmark: g.benchmark,
          group: g.group,
          tasks: g.tasks,
          difference: fixed(g.difference),
          [pct]: interval(g.ci),
          // Summaries stored before the permutation test have no p-value.
          'p (sign-flip)': g.pValue === undefined ? 'n/a' : g.pValue.toPrecision(2),
        })),
      ),
    );
  }
  return parts.join('\n');
}

/** Writes the run's chart to `$MOCKWORLD_HOME/evaluation/<run>/scores.svg`; returns its path. */
async function writeScoresChart(runId: string, metrics: EvaluationMetrics): Promise<string> {
  const directory = path.join(loadEnvironment().MOCKWORLD_HOME, 'evaluation', datasetDirectoryName(runId));
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, 'scores.svg');
  await writeFile(file, await renderChartSvg(evaluationChartSpec(runId, metrics)), 'utf8');
  return file;
}
