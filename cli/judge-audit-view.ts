import { JudgeAuditSummarySchema } from '../schemas/judge-audit-spec.js';
import { renderTable } from './table.js';

/**
 * `mockworld report <id>` of a JudgeAudit run: per checkpoint (policy step) the trajectories
 * audited, the judgings scored and failed, the mean score, and the mean within-trajectory
 * variance and std of the k scores (seed 000 App. B, Figure 6). A run without a summary yet
 * (running, or failed at its plan) says so.
 */
export function renderJudgeAuditReport(
  runId: string,
  status: string,
  summary: Record<string, unknown> | null,
): string {
  const parsed = JudgeAuditSummarySchema.safeParse(summary);
  if (!parsed.success) {
    const failure = typeof summary?.['failure'] === 'string' ? `: ${summary['failure']}` : '';
    return `JudgeAudit run ${runId}: ${status} (no result yet${failure})`;
  }
  const audit = parsed.data;
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
  ].join('\n');
}

const fixed = (value: number | null) => (value === null ? '-' : value.toFixed(4));
