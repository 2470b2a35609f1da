import type { PlanIterationInput } from '../activities/training/plan.js';
import type { GrpoSpec } from '../schemas/grpo-spec.js';

/** The planIteration input of a GRPO run's 0-based iteration: its dataset, batch and seed. */
export function planInput(spec: GrpoSpec, runId: string, iteration: number): PlanIterationInput {
  const { synthesisRunId, heldOutTasks, toolUseTasks, reasoning } = spec.dataset;
  return {
    runId,
    synthesisRunId,
    heldOutTasks,
    globalBatch: spec.globalBatch,
    seed: spec.seed,
    iteration,
    ...(toolUseTasks !== undefined ? { toolUseTasks } : {}),
    ...(reasoning
      ? {
          reasoning: {
            synthesisRunId: reasoning.synthesisRunId ?? synthesisRunId,
            problems: reasoning.problems,
            search: reasoning.search !== undefined,
          },
        }
      : {}),
  };
}
