import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { JudgeAuditActivities } from '../activities/reward/judge-audit.js';
import type { RunActivities } from '../activities/runs.js';
import type { JudgeAuditSummary } from '../schemas/judge-audit-spec.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { mapBounded } from './bounded.js';
import { linkViewer, RunControl } from './run-control.js';
import { endRunOnError } from './run-end.js';
import { validateSpec } from './spec-guard.js';

const { recordRunStart, recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);
const { planJudgeAudit, judgeAuditTrajectory, summarizeJudgeAudit } =
  proxyActivities<JudgeAuditActivities>(LONG_ACTIVITY);

/**
 * Judge stability audit (seed 000 App. B, Figure 6): a GRPO run's held-out evaluation
 * trajectories at chosen checkpoints, a seeded sample of tasks, each trajectory judged k times,
 * and per checkpoint the mean score, the mean within-trajectory variance and std of the k scores,
 * and the judge's failures. The plan refuses a run or checkpoint without evaluation episodes
 * before any judge call; pause takes effect between trajectories. The summary is the run's
 * result and its `runs` row (`mockworld report <id>`).
 */
export async function JudgeAudit(input: unknown): Promise<JudgeAuditSummary> {
  const spec = await validateSpec('JudgeAudit', input);
  const runId = workflowInfo().workflowId;
  const control = new RunControl('JudgeAudit', 0);
  linkViewer(await recordRunStart({ runId, kind: 'JudgeAudit', spec }));

  let summary: JudgeAuditSummary;
  try {
    control.progress(0, 'planning: the training run’s held-out evaluation episodes');
    const plan = await planJudgeAudit(spec);
    control.setTotal(plan.items.length);
    const counts = { scored: 0, failures: 0 };
    let done = 0;
    await mapBounded(plan.items, spec.concurrency, async (item) => {
      await control.untilResumed();
      const judged = await judgeAuditTrajectory({
        ...item,
        auditRunId: runId,
        trainingRunId: plan.trainingRunId,
        k: spec.k,
        judge: plan.judge,
        templates: plan.templates,
      });
      counts.scored += judged.scored;
      counts.failures += judged.failures;
      control.progress(++done, `judged ${done} of ${plan.items.length} trajectories ${spec.k} times`, {
        ...counts,
      });
    });
    summary = {
      trainingRunId: plan.trainingRunId,
      k: spec.k,
      judgeModel: plan.judgeModel,
      checkpoints: await summarizeJudgeAudit({ auditRunId: runId, k: spec.k }),
    };
  } catch (error) {
    return endRunOnError(control, runId, error);
  }
  control.setState('completed');
  await recordRunFinish({ runId, state: 'completed', summary: { ...summary } });
  return summary;
}
