import type pg from 'pg';
import { TrainingPlanError } from './errors.js';
import { iterationSlice, splitHeldOut } from './sampling.js';

/** Input of {@link planIteration}. */
export interface PlanIterationInput {
  /** The training run (workflow id); echoed, not used for sampling. */
  readonly runId: string;
  /** Synthesis run whose kept tasks are trained on. */
  readonly synthesisRunId: string;
  /** Kept tasks held out for evaluation (never trained on). */
  readonly heldOutTasks: number;
  /** Tasks per iteration (B). */
  readonly globalBatch: number;
  /** The spec's seed: the split and every epoch's permutation derive from it. */
  readonly seed: number;
  /** 0-based iteration. */
  readonly iteration: number;
}

/** The tasks of one iteration and the shape of the schedule. */
export interface IterationPlan {
  /** The iteration's `globalBatch` distinct training task ids. */
  readonly taskIds: string[];
  /** 0-based epoch of the iteration. */
  readonly epoch: number;
  /** Training tasks (kept tasks less the held-out ones). */
  readonly trainSize: number;
  /** ceil(trainSize / globalBatch): `epochs * iterationsPerEpoch` iterations make the run. */
  readonly iterationsPerEpoch: number;
  /** The held-out evaluation task ids (the same for every iteration of the run). */
  readonly heldOutTaskIds: string[];
}

/**
 * Plans one GRPO iteration: the kept tasks of the synthesis run in `idx` order, the first
 * `heldOutTasks` of a seeded shuffle held out, and the iteration's slice of a seeded per-epoch
 * permutation of the rest ({@link iterationSlice}). Deterministic in the seed and the kept tasks.
 * Throws {@link TrainingPlanError} when the tasks do not fit the spec.
 */
export async function planIteration(pool: pg.Pool, input: PlanIterationInput): Promise<IterationPlan> {
  const { rows } = await pool.query<{ task_id: string }>(
    `SELECT task_id FROM tasks WHERE run_id = $1 AND stage = 'kept' ORDER BY idx`,
    [input.synthesisRunId],
  );
  const kept = rows.map((r) => r.task_id);
  if (input.heldOutTasks > kept.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `heldOutTasks (${input.heldOutTasks}) exceeds its ${kept.length} kept tasks; lower dataset.heldOutTasks`,
    );
  }
  const { heldOut, train } = splitHeldOut(kept, input.heldOutTasks, input.seed);
  if (input.globalBatch > train.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `globalBatch (${input.globalBatch}) exceeds the ${train.length} training tasks ` +
        `(${kept.length} kept, ${heldOut.length} held out); lower globalBatch or dataset.heldOutTasks`,
    );
  }
  const slice = iterationSlice(train, input.globalBatch, input.iteration, input.seed);
  return {
    taskIds: slice.items,
    epoch: slice.epoch,
    trainSize: train.length,
    iterationsPerEpoch: slice.iterationsPerEpoch,
    heldOutTaskIds: heldOut,
  };
}
