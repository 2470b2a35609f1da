import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { judgeVarianceChartSpec } from '../activities/charts/judge-audit-charts.js';
import { renderChartSvg } from '../activities/charts/render.js';
import { datasetDirectoryName } from '../activities/synthesis/export.js';
import { loadEnvironment } from '../schemas/environment.js';
import { JudgeAuditSummarySchema, type JudgeAuditSummary } from '../schemas/judge-audit-spec.js';
import { renderTable } from './table.js';

/**
 * `mockworld report <id>` of a JudgeAudit run: per checkpoint (policy step) the trajectories
 * audited, the judgings scored and failed, the mean score, and the mean within-trajectory
 * variance and std of the k scores (seed 000 App. B, Figure 6). A run without a summary yet
 * (running, or failed at its plan) says so.
 */
export async function renderJudgeAuditReport(
  runId: string,
  status: string,
  summary: Record<string, unknown> | null,
): Promise<string> {
  const parsed = JudgeAuditSummarySchema.safeParse(summary);
  if (!parsed.success) {
    const failure = typeof summary?.['failure'] === 'string' ? `: ${summary['failure']}` : '';
    return `JudgeAudit run ${runId}: ${status} (no result yet${failure})`;
  }
  const audit = parsed.data;
  // The figure is an extra: a report must not fail because MOCKWORLD_HOME is not writable.
  const chart = await writeVarianceChart(runId, audit).catch(
    (error: unknown) => `not written (${error instanceof Error ? error.message : error})`,
  );
  const rows = audit.checkpoints.map((c) => ({
    step: c.policyStep,
    trajectories: c.trajectories,
    scored: c.scored,
    failures: c.failures,
    'mean score': fixed(c.meanScore),
    'mean variance': fixed(c.meanVariance),
    'mean std': fixed(c.meanStd),
  }));
  return [
    `JudgeAudit run ${runId}: ${status}; run ${audit.trainingRunId}, judge ${audit.judgeModel}, k = ${audit.k}`,
    '',
    renderTable(rows),
    '',
    'variance and std: of each trajectory\u2019s k scores, averaged over its checkpoint\u2019s trajectories; failures are judgings the judge could not give, never scores',
    '',
    `variance chart: ${chart}`,
  ].join('\n');
}

/** Writes the audit's chart to `$MOCKWORLD_HOME/judge-audit/<run>/variance.svg`; returns its path. */
async function writeVarianceChart(runId: string, audit: JudgeAuditSummary): Promise<string> {
  const directory = path.join(loadEnvironment().MOCKWORLD_HOME, 'judge-audit', datasetDirectoryName(runId));
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, 'variance.svg');
  await writeFile(file, await renderChartSvg(judgeVarianceChartSpec(runId, audit)), 'utf8');
  return file;
}

const fixed = (value: number | null) => (value === null ? '-' : value.toFixed(4));
