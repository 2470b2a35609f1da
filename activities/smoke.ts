import type { ModelRole } from '../schemas/model-endpoint.js';
import { resolveEndpoint } from './llm/default-endpoint.js';
import type { ModelClient } from './llm/index.js';

/** Input of one smoke step. */
export interface SmokeStepInput {
  readonly runId: string;
  readonly step: number;
  readonly prompt: string;
  readonly model: ModelRole;
}

/** Output of one smoke step: small, so the history stays small. */
export interface SmokeStepResult {
  readonly text: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cached: boolean;
}

/** The smoke pipeline's activity: one cached model call per step. */
export function createSmokeActivities(models: ModelClient) {
  return {
    async smokeStep({ runId, step, prompt, model }: SmokeStepInput): Promise<SmokeStepResult> {
      const result = await models.chat({
        endpoint: resolveEndpoint(model.endpoint),
        messages: [
          { role: 'system', content: 'You are a concise assistant.' },
          { role: 'user', content: prompt },
        ],
        sampling: model.sampling,
        sampleIndex: step,
        runId,
        role: 'smoke',
      });
      return {
        text: (result.message.content ?? '').slice(0, 500),
        promptTokens: result.usage.promptTokens,
        completionTokens: result.usage.completionTokens,
        cached: result.cached,
      };
    },
  };
}

/** The smoke activities' interface, for `proxyActivities`. */
export type SmokeActivities = ReturnType<typeof createSmokeActivities>;
