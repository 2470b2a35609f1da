import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.js';
import type { SmokeActivities, SmokeStepResult } from '../activities/smoke.js';
import { LONG_ACTIVITY, SHORT_ACTIVITY } from './activity-options.js';
import { linkViewer, RunControl } from './run-control.js';
import { endRunOnError } from './run-end.js';
import { validateSpec } from './spec-guard.js';

const { recordRunStart, recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);
const { smokeStep } = proxyActivities<SmokeActivities>(LONG_ACTIVITY);

/** What a smoke run returns (and stores as its summary). */
export interface SmokeSummary {
  readonly steps: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedSteps: number;
  readonly firstAnswer: string;
}

/**
 * Smoke: one model call per step through a real worker and the model layer. Its only argument is
 * the JSON spec, so it starts from the Temporal UI as well as from `mockworld start`.
 */
export async function Smoke(input: unknown): Promise<SmokeSummary> {
  const spec = await validateSpec('Smoke', input);
  const runId = workflowInfo().workflowId;
  const control = new RunControl('Smoke', spec.steps);
  linkViewer(await recordRunStart({ runId, kind: 'Smoke', spec }));

  const results: SmokeStepResult[] = [];
  try {
    for (let step = 0; step < spec.steps; step++) {
      await control.untilResumed();
      control.progress(step, `model call ${step + 1} of ${spec.steps}`);
      results.push(await smokeStep({ runId, step, prompt: spec.prompt, model: spec.model }));
    }
  } catch (error) {
    return endRunOnError(control, runId, error);
  }

  const summary: SmokeSummary = {
    steps: results.length,
    promptTokens: results.reduce((sum, r) => sum + r.promptTokens, 0),
    completionTokens: results.reduce((sum, r) => sum + r.completionTokens, 0),
    cachedSteps: results.filter((r) => r.cached).length,
    firstAnswer: results[0]?.text ?? '',
  };
  control.progress(spec.steps, 'done');
  control.setState('completed');
  await recordRunFinish({ runId, state: 'completed', summary: { ...summary } });
  return summary;
}
