import { embeddedToyLabel } from '../activities/llm/default-endpoint.js';
import { standingLine, type JudgeStanding } from '../schemas/judge-controls.js';
import type { RunReport } from './run-commands.js';
import { renderSummary } from './summary-view.js';
import { renderTable } from './table.js';
import { renderTaskOutcomes } from './task-outcomes.js';
import { renderBenchmarkSteps, renderIterations, renderSftSteps } from './training-view.js';

/**
 * The judge's standing as a line: from an Evaluation's or a Synthesis run's summary, a training
 * run's latest iteration (JudgeStanding objects), or a study's summary (its own line,
 * `UNRELIABLE: …` or `ok: …`, activities/study/judge-standing.ts).
 */
function judgeLine(report: RunReport): string | undefined {
  const judge: unknown = report.summary?.judge ?? report.iterations?.at(-1)?.metrics?.judge;
  if (typeof judge === 'string') return `${judge.startsWith('UNRELIABLE') ? '⚠ ' : ''}judge ${judge}`;
  if (typeof judge !== 'object' || judge === null || !('controlPassRate' in judge)) return undefined;
  const standing = judge as JudgeStanding;
  return `${standing.unreliable ? '⚠ ' : ''}${standingLine(standing)}`;
}

/**
 * Whether the run's figures can be believed, as lines to put first (each followed by a blank):
 * the roles a toy model played, and the judge's standing by its controls.
 */
export function believability(report: RunReport): string[] {
  const lines: string[] = [];
  if (report.toyRoles?.length) lines.push(embeddedToyLabel(report.toyRoles), '');
  const judge = judgeLine(report);
  if (judge) lines.push(judge, '');
  return lines;
}

/** USD as a report shows it; '—' when the endpoint had no prices (unknown, not free). */
const dollars = (usd: number | null) => (usd === null ? '—' : `$${usd.toFixed(usd < 1 ? 6 : 2)}`);

/** A stored run as tables: its summary, and its model usage by role when the run has its own calls. */
export function renderReport(report: RunReport): string {
  // A training run's latest metrics are the last row of its per-iteration table.
  const { latestMetrics: _shownBelow, ...summary } = report.summary ?? {};
  const parts = [`${report.kind} run ${report.runId}: ${report.status}`, ''];
  parts.push(...believability(report));
  parts.push(renderSummary(report.iterations ? summary : (report.summary ?? {})));
  if (report.iterations && report.kind === 'SftTraining')
    parts.push('', 'loss per step', renderSftSteps(report.iterations));
  else if (report.iterations) parts.push('', 'metrics per iteration', renderIterations(report.iterations));
  const benchmarks = report.iterations ? renderBenchmarkSteps(report.iterations) : '';
  if (benchmarks) parts.push('', 'benchmarks per step (child Evaluation runs)', benchmarks);
  if (report.tasks) parts.push('', renderTaskOutcomes(report.runId, report.tasks));
  if (report.usage.length) {
    const rows = report.usage.map(({ costUsd, ...u }) => ({ ...u, cost: dollars(costUsd) }));
    const priced = report.usage.filter((u) => u.costUsd !== null);
    const total = {
      role: '(run)',
      calls: report.usage.reduce((n, u) => n + u.calls, 0),
      promptTokens: report.usage.reduce((n, u) => n + u.promptTokens, 0),
      completionTokens: report.usage.reduce((n, u) => n + u.completionTokens, 0),
      attempts: report.usage.reduce((n, u) => n + u.attempts, 0),
      rejections: report.usage.reduce((n, u) => n + u.rejections, 0),
      cost: priced.length ? dollars(priced.reduce((n, u) => n + u.costUsd!, 0)) : '—',
    };
    parts.push(
      '',
      'model usage by role',
      renderTable([...rows, total] as unknown as Record<string, unknown>[]),
    );
  }
  return parts.join('\n');
}
