import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { getPool } from '../../activities/store/db.js';
import { writeStudyReport } from '../../activities/study/report.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { renderEvaluationReport } from '../evaluation-view.js';
import { renderJudgeAuditReport } from '../judge-audit-view.js';
import { believability, renderReport } from '../report-view.js';
import { readReport, writeRewardPlot } from '../run-commands.js';
import type { Command } from './command.js';

/**
 * `mockworld report <id>`: a run's stored statistics and model usage, rendered for its kind (an
 * evaluation's scores, a judge audit's agreement, a study's fit, a training run's iterations).
 */
export const reportCommand: Command = {
  name: 'report',
  async run({ print, needId }) {
    const report = await readReport(needId());
    if (report.kind === 'Evaluation') {
      const pool = getPool(loadEnvironment().DATABASE_URL);
      const view = await renderEvaluationReport(pool, report.runId, report.status, report.summary);
      print([...believability(report), view.text].join('\n'), { ...report, ...view.json });
      return 0;
    }
    if (report.kind === 'JudgeAudit') {
      print(await renderJudgeAuditReport(report.runId, report.status, report.summary), report);
      return 0;
    }
    if (report.kind === 'ScalingStudy') {
      // Re-fitted from the stored cells, so it also shows a study that is still training.
      const written = await writeStudyReport(getPool(loadEnvironment().DATABASE_URL), report.runId);
      const markdown = await readFile(written.reportPath, 'utf8');
      print(`${markdown}\nreport and plots: ${path.dirname(written.reportPath)}`, {
        ...report,
        ...written,
      });
      return 0;
    }
    if (report.iterations?.length && report.kind !== 'SftTraining') {
      // The figure is an extra: a report must not fail because MOCKWORLD_HOME is not writable.
      const plot = await writeRewardPlot(report.runId, report.iterations).catch(
        (error: unknown) => `not written (${error instanceof Error ? error.message : error})`,
      );
      print(`${renderReport(report)}\n\nreward curve: ${plot}`, { ...report, plot });
      return 0;
    }
    print(renderReport(report), report);
    return 0;
  },
};
