import type { CorrectnessInput, CorrectnessReward } from '../../schemas/reasoning-correctness.js';
import { activityCancellation } from '../cancellation.js';
import type { ModelClient } from '../llm/index.js';
import { DEFAULT_SANDBOX_VENV, locateSandbox, type SandboxInstall } from '../sandbox/install.js';
import { getPool } from '../store/db.js';
import { scoreAnswers } from './rewards.js';

export { CORRECTNESS_ERRORS, CorrectnessInputError, MathVerifierError } from './errors.js';
export { extractFinalAnswer, type ExtractedAnswer } from './extract.js';
export { verifyMath, type MathPair } from './math-verify.js';
export { normalizeAnswer } from './normalize.js';
export { scoreAnswers, type CorrectnessDependencies } from './rewards.js';
export { ANSWER_JUDGE_ROLE, exactMatch, judgeAnswer } from './search-match.js';

/** The correctness rewards' activity, bound to one database, the model layer and the sandbox venv. */
export function createCorrectnessActivities(
  databaseUrl: string,
  models: ModelClient,
  venv: string = DEFAULT_SANDBOX_VENV,
) {
  let install: SandboxInstall | undefined;
  return {
    /** Rewards (1/0) for responses to one math or search problem, stored with their extracted answers. */
    async scoreReasoningAnswers(input: CorrectnessInput): Promise<CorrectnessReward[]> {
      const signal = activityCancellation();
      return scoreAnswers(
        {
          pool: getPool(databaseUrl),
          models,
          sandbox: () => ({ install: (install ??= locateSandbox(venv)), signal }),
          signal,
        },
        input,
      );
    },
  };
}

export type CorrectnessActivities = ReturnType<typeof createCorrectnessActivities>;
