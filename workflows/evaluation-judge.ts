/**
 * An Evaluation's judges, by their controls (issue 36), in workflow code: what its summary says
 * of them and what the Temporal UI shows while they are unreliable.
 */
import { patched, proxyActivities } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import type { EvaluationSpec } from '../schemas/evaluation-spec.js';
import { judgeStanding, type JudgeStanding } from '../schemas/judge-controls.js';
import { SHORT_ACTIVITY } from './activity-options.js';
import type { RunControl } from './run-control.js';

const { evaluationJudgeControls, syntheticJudgeControls } =
  proxyActivities<MockworldActivities>(SHORT_ACTIVITY);

/**
 * The evaluation's judges, by their controls (issue 36): the synthetic benchmark's rubric judge
 * and the search benchmark's answer judge, as one standing (the stricter threshold), named in the
 * Temporal UI when unreliable and kept in the summary. Undefined with neither benchmark.
 */
export async function evaluationJudgeStanding(
  spec: EvaluationSpec,
  runId: string,
  control: RunControl,
): Promise<JudgeStanding | undefined> {
  const { synthetic, search } = spec.benchmarks;
  let standing: JudgeStanding | undefined;
  if (patched('answer-judge-controls')) {
    if (!synthetic && !search) return undefined;
    const tally = await evaluationJudgeControls({
      evaluationId: runId,
      rubric: synthetic !== undefined,
      answer: search !== undefined,
    });
    const minPassRate = Math.max(
      synthetic?.judgeControls.minPassRate ?? 0,
      search?.judgeControls.minPassRate ?? 0,
    );
    const figures = [synthetic && 'synthetic rewards', search && 'search scores']
      .filter(Boolean)
      .join(' and ');
    standing = judgeStanding(tally, minPassRate, figures, 'control items');
  } else {
    // Runs started before the answer judge had controls: the rubric judge's alone.
    if (!synthetic || !patched('rubric-judge-controls')) return undefined;
    const tally = await syntheticJudgeControls({ evaluationId: runId });
    standing = judgeStanding(tally, synthetic.judgeControls.minPassRate, 'synthetic rewards');
  }
  control.warn('judge', standing?.reason ?? undefined);
  return standing;
}
