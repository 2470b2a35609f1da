import type { RunReport } from './run-commands.js';
import { renderSummary } from './summary-view.js';
import { renderTable } from './table.js';
import { renderIterations } from './training-view.js';

/** A stored run as tables: its summary, and its model usage by role when the run has its own calls. */
export function renderReport(report: RunReport): string {
  // A training run's latest metrics are the last row of its per-iteration table.
  const { latestMetrics: _shownBelow, ...summary } = report.summary ?? {};
  const parts = [
    `${report.kind} run ${report.runId}: ${report.status}`,
    '',
    renderSummary(report.iterations ? summary : (report.summary ?? {})),
  ];
  if (report.iterations) parts.push('', 'metrics per iteration', renderIterations(report.iterations));
  if (report.usage.length)
    parts.push('', 'model usage by role', renderTable(report.usage as unknown as Record<string, unknown>[]));
  return parts.join('\n');
}

